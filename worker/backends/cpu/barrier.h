// Per-block barriers across ranks through the Signal slots (docs/design.md section 4).
//
// Block b of every rank stores its new epoch into slot [b][rank] of every peer's Signal, then
// waits until every peer's epoch in its own Signal reached it. The store is a release: it first
// drains the rank's posted stores, so that everything this rank did before the barrier (inputs,
// re-arming of Lamport staging, cross-device stores) is visible to a peer that passes it. That is
// what the start barrier (acquire/release: a call's stores land after the peers' re-arming) and
// two_kernel's end_sync rely on.
#pragma once

#include "worker/backends/cpu/block_context.h"

namespace colltest::cpu {

enum class BarrierSlot { kStart, kEnd };

// Returns false when the wait timed out or the rank aborted (the hang is recorded in the guard).
bool BlockBarrier(const BlockContext& ctx, BarrierSlot slot, const char* phase);

// Whole-rank barrier used by the host between calls (after growing the armed Lamport region).
bool HostBarrier(const GroupView& group, SpinGuard& guard, PostedStores& posted);

}  // namespace colltest::cpu
