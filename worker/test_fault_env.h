// COLLTEST_TEST_FAULT=KIND[:RANK], read by the test build of the worker only
// (colltest-worker-breaks, built with the tests): a node broken by itself, for the tests of checks
// that send one request to many nodes (the fleet check), where a fault in the request would reach
// every node. The production colltest-worker is built without this file, so no environment can
// inject a fault into it.
#pragma once

#include <memory>

#include "worker/backend.h"

namespace colltest::worker {

// `backend` with the fault COLLTEST_TEST_FAULT names (the grammar of common/fault_spec.h) injected
// into every case that carries no fault of its own, whatever the server allows; `backend` itself
// when the variable is unset or empty. Set, it says so on stderr, which colltestd keeps in the
// worker's log.
std::unique_ptr<Backend> WithTestFaultFromEnvironment(std::unique_ptr<Backend> backend);

}  // namespace colltest::worker
