#include "server/workers/rendezvous.h"

#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/shm_names.h"
#include "server/workers/fan_out.h"

namespace colltest::server {
namespace {

using colltest::worker::v1::ConnectReply;
using colltest::worker::v1::ConnectRequest;
using colltest::worker::v1::InitReply;
using colltest::worker::v1::InitRequest;

// Runs `call` on every rank at once. A rank whose call fails is explained, unless it only failed
// because an earlier failure got the group killed; the first real failure wins.
absl::Status OnEveryRank(absl::Span<const std::unique_ptr<WorkerProcess>> ranks,
                         absl::string_view phase, absl::Duration timeout,
                         const std::function<void()>& abort,
                         const std::function<grpc::Status(size_t, grpc::ClientContext&)>& call) {
  FirstFailure first(abort);
  std::vector<absl::Status> errors(ranks.size());
  ParallelFor(ranks.size(), [&](size_t rank) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
    const grpc::Status status = call(rank, context);
    if (status.ok()) return;
    WorkerProcess& process = *ranks[rank];
    switch (process.ClassifyFailedCall(status)) {
      case CallFailure::kKilledByUs:
        errors[rank] = absl::AbortedError(
            absl::StrCat("rank ", rank, " was killed during ", phase, " (group torn down)"));
        return;
      case CallFailure::kDied:
        errors[rank] = absl::UnavailableError(
            absl::StrCat(RankDiedMessage(rank, process), " (during ", phase, ")"));
        break;
      case CallFailure::kLate:
      case CallFailure::kStalled:  // these two are found only while a case runs
      case CallFailure::kAbandoned:
        errors[rank] = absl::DeadlineExceededError(
            absl::StrCat("rank ", rank, " (device ", process.device(), ") did not answer ", phase,
                         " within ", absl::FormatDuration(timeout)));
        break;
      case CallFailure::kError: {
        // The worker's own code, with the rank and the phase in front of its message.
        const absl::Status answer = common::FromGrpcStatus(status);
        errors[rank] =
            absl::Status(answer.code(), absl::StrCat("rank ", rank, " (device ", process.device(),
                                                     ") ", phase, " failed: ", answer.message()));
        break;
      }
    }
    first.Record(rank);
  });
  if (std::optional<size_t> rank = first.rank(); rank.has_value()) return errors[*rank];
  for (const absl::Status& error : errors) {
    if (!error.ok()) return error;
  }
  return absl::OkStatus();
}

// Every rank must launch the same grid (docs/design.md section 4), and a backend clamps its grid
// to the blocks its device keeps co-resident: ranks on devices that hold different numbers (mixed
// models, MIG slices of different sizes) would wait at a barrier for blocks that never run. Such a
// group is refused before any case, naming the two ranks.
absl::Status SameResidentBlocksOnEveryRank(absl::Span<const InitReply> replies) {
  for (size_t rank = 1; rank < replies.size(); ++rank) {
    if (replies[rank].resident_blocks() == replies[0].resident_blocks()) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", rank, " (", replies[rank].device_name(), ") keeps ",
        replies[rank].resident_blocks(), " blocks co-resident and rank 0 (",
        replies[0].device_name(), ") ", replies[0].resident_blocks(),
        ": the devices of a group must be alike, since every rank launches the same grid"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Rendezvous(absl::Span<const std::unique_ptr<WorkerProcess>> ranks,
                        uint64_t max_case_bytes, uint32_t ranks_on_device, uint32_t device_slots,
                        absl::Span<const colltest::v1::KernelPlugin> kernel_plugins,
                        absl::Duration timeout, const std::function<void()>& abort,
                        std::vector<InitReply>& init_replies) {
  const uint32_t world = static_cast<uint32_t>(ranks.size());
  init_replies.assign(world, InitReply());
  absl::Status status =
      OnEveryRank(ranks, "Init", timeout, abort, [&](size_t rank, grpc::ClientContext& context) {
        InitRequest request;
        request.set_rank(static_cast<uint32_t>(rank));
        request.set_world_size(world);
        request.set_device(ranks[rank]->device());
        request.set_max_case_bytes(max_case_bytes);
        request.set_ranks_on_device(ranks_on_device);
        request.set_device_slots(device_slots);
        for (const colltest::v1::KernelPlugin& p : kernel_plugins)
          *request.add_kernel_plugins() = p;
        // The controller names the segments so that it can find them after a crash
        // (server/workers/shm_segments.h); backends without any ignore it.
        request.set_shm_prefix(common::ShmSegmentPrefix(getpid(), ranks[rank]->pid()));
        InitReply reply;
        grpc::Status s = ranks[rank]->stub().Init(&context, request, &reply);
        if (s.ok()) init_replies[rank] = std::move(reply);
        return s;
      });
  if (!status.ok()) return status;
  if (absl::Status alike = SameResidentBlocksOnEveryRank(init_replies); !alike.ok()) return alike;

  ConnectRequest table;
  for (uint32_t rank = 0; rank < world; ++rank) {
    auto* peer = table.add_peers();
    peer->set_rank(rank);
    *peer->mutable_handles() = init_replies[rank].handles();
  }
  table.set_nccl_unique_id(init_replies[0].nccl_unique_id());
  return OnEveryRank(ranks, "Connect", timeout, abort,
                     [&](size_t rank, grpc::ClientContext& context) {
                       ConnectReply reply;
                       return ranks[rank]->stub().Connect(&context, table, &reply);
                     });
}

}  // namespace colltest::server
