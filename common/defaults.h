// Defaults every room shares: a value written once here, so that the client's help, colltestd's
// validation, the HTTP gateway and the workers cannot disagree about it.
#pragma once

#include <cstdint>

namespace colltest {

// How long one device wait may spin before the case is a HANG, when a request leaves timeout_ms 0.
inline constexpr uint32_t kDefaultCaseTimeoutMs = 5000;
// Graph mode captures this many calls (at most) and replays them (worker/case_driver.h); the
// controller's wall cap on a case counts them (server/workers/case_deadline.h).
inline constexpr uint32_t kGraphCalls = 16;
// The largest m * n * element size of one rank's input a worker is set up for when colltestd
// passes none (colltestd --max-case-bytes).
inline constexpr uint64_t kDefaultMaxCaseBytes = uint64_t{32} << 20;

// The largest gRPC message colltestd, the client and the workers send and accept: a sweep returns
// every case with its per-rank results in one message, which gRPC's 4 MiB default would cut off
// after a few thousand cases.
inline constexpr int kMaxGrpcMessageBytes = 64 << 20;

// The scales of the static quantising epilogues when a request leaves them 0
// (docs/quantisation.md). Powers of two, so that a value on a rounding tie stays on it once scaled.
// fp8_tensor's y ~ code x scale: 1/32 keeps |y| up to 14 unsaturated in e4m3fn (7.5 in e4m3fnuz).
inline constexpr float kDefaultFp8Scale = 0.03125f;
// nvfp4's y ~ E2M1 x block scale / global scale: 256 puts a block scale at 448 at a block amax of
// 10.5.
inline constexpr float kDefaultNvfp4GlobalScale = 256.0f;

}  // namespace colltest
