// lamport_tb's rotation rules (docs/design.md section 4; details in docs/protocol.md). Three
// staging buffers per rank, rotated per call by a counter in the rank's RankControl; each call
// pushes into and consumes buffer call % 3 and, at its end, clears the previous call's buffer,
// whose next writer is a peer at call + 2 (a peer is at most one call ahead, since it needs this
// rank's data).
#pragma once

#include <cstdint>

#include "worker/numerics/host_device.h"
#include "worker/protocol/control.h"

namespace colltest::protocol {

// `buffers` is kTbBuffers outside the cpu mutation test that proves two are not enough.
COLLTEST_HD uint32_t TbBuffer(uint64_t call, uint32_t buffers = kTbBuffers) {
  return static_cast<uint32_t>(call % buffers);
}

// The buffer a rank clears at the end of `call`: the one of call - 1.
COLLTEST_HD uint32_t TbClearedBuffer(uint64_t call, uint32_t buffers = kTbBuffers) {
  return static_cast<uint32_t>((call + buffers - 1) % buffers);
}

// Whether `src` stages its contribution in `dst`'s triple buffer. A rank's own contribution is
// never staged: it is no message (its input is complete before the call starts and stays
// unchanged during it), so the rank reads its own input, canonicalised exactly as it pushes it to
// its peers so that every rank sums the same bits. Its own slot therefore stays armed and is
// neither written nor cleared.
COLLTEST_HD bool TbStaged(uint32_t src, uint32_t dst) { return src != dst; }

}  // namespace colltest::protocol
