// Derived views of a RunResult or a HealthResponse shared by the formatters, so every format agrees
// on them.
#pragma once

#include <cstdint>
#include <string>

#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// The variant that actually ran: `resolved_variant` when the server set it (for `auto`), otherwise
// the requested one.
v1::Variant EffectiveVariant(const v1::CaseResult& c);

// "lamport", or "auto(lamport)" when `auto` dispatched, for human-facing output.
std::string VariantLabel(const v1::CaseResult& c);

// Bytes per rank of one case: m x n x the dtype's element size (2 for bf16/fp16, 4 for fp32), the
// figure nccl-tests calls "size" and algbw is computed from.
uint64_t CaseBytes(const v1::CaseResult& c);

// Bus bandwidth of one rank. The proto carries it per case only; scaling the case's figure by the
// ratio of medians keeps the server's definition of bytes moved, whatever it is.
double RankBusBandwidth(const v1::CaseResult& c, const v1::RankResult& r);

struct StatusCounts {
  int ok = 0;
  int wrong = 0;
  int hang = 0;
  int error = 0;
  int unsupported = 0;
  int unspecified = 0;  // a server that left the status unset; counted as an error by exit codes
};
StatusCounts CountStatuses(const v1::RunResult& run);

// "12 cases: 10 OK, 1 WRONG, 1 UNSUPPORTED" (zero counts omitted).
std::string StatusCountsLine(const StatusCounts& counts);

// RunResult.ranks_per_gpu, with 0 (a record older than the field) read as 1: the most ranks of the
// run's group that shared one GPU (colltestd --ranks-per-gpu).
uint32_t RanksPerGpu(const v1::RunResult& run);

// Whether the run's ranks shared a GPU (ranks_per_gpu above 1, or time-sliced): its times are
// kernel overhead, never a link measurement, and its busbw is no link figure.
bool SharedGpu(const v1::RunResult& run);

// What every human-facing format says of such a run, "" for a run on separate GPUs:
//   "ranks share a GPU (4 per GPU): times are kernel overhead, not a link measurement; busbw is
//   not a link figure", or with time_sliced "ranks share a time-sliced GPU (4 per GPU): timings
//   are meaningless (time-sliced), not a link measurement; busbw is not a link figure".
std::string SharedGpuNote(const v1::RunResult& run);

// MachineIdentity.ranks_per_gpu (colltestd --ranks-per-gpu), 0 (older records) read as 1.
uint32_t MachineRanksPerGpu(const v1::MachineIdentity& machine);

// The GPU a device is a slot of (Device.physical_index); a record older than the field has 0 with
// slot 0, read as the device's own index (one device per GPU then).
uint32_t PhysicalIndex(const v1::Device& device);

// True for states in which the run did not complete its cases: CANCELLED, FAILED, and INTERRUPTED
// (colltestd stopped under it; the cases it finished are kept, the others were never run).
bool RunAborted(v1::RunState state);

// "1" for a rank, "0-1" for a pair.
std::string TargetDevices(const v1::HealthTarget& t);

// The device a hung target waited for, or -1. Only a HANG names one: elsewhere the field may be
// left at its proto default 0, which would wrongly accuse device 0.
int32_t SuspectDevice(const v1::HealthTarget& t);

}  // namespace colltest::client
