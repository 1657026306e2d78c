// COLLTEST_BREAK_PROTOCOL, read by the test build of the worker only (colltest-worker-breaks, built
// with the tests): the integration tests use it to break a protocol rule in real worker processes.
// The production colltest-worker is built without this file, so no environment can break it.
#pragma once

#include "absl/status/statusor.h"
#include "worker/backends/cpu/protocol_breaks.h"

namespace colltest::cpu {

// The switches COLLTEST_BREAK_PROTOCOL names (comma-separated, see ParseProtocolBreaks); none when
// it is unset or empty; InvalidArgument for an unknown name.
absl::StatusOr<ProtocolBreaks> ProtocolBreaksFromEnvironment();

}  // namespace colltest::cpu
