// CollectiveTestService's baselines and comparison: SetBaseline (owned by their setter, bounded per
// owner), ListBaselines and Compare over the history database (store/run_store.h) and
// server/runs/compare.h.
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/names.h"
#include "server/api/service.h"
#include "server/net/caller_key.h"
#include "server/runs/compare.h"
#include "server/runs/metrics.h"
#include "server/runs/query_validation.h"
#include "server/runs/validation.h"

namespace colltest::server {

using common::ToGrpcStatus;

namespace v1 = ::colltest::v1;

absl::StatusOr<v1::RunResult> CollectiveTestService::FinishedRun(const std::string& run_id,
                                                                 absl::string_view field) const {
  absl::StatusOr<v1::RunResult> run = history_.Get(run_id);
  if (!run.ok()) return run.status();
  if (!IsTerminal(run->state())) {
    return absl::FailedPreconditionError(absl::StrCat(field, ": run ", run_id, " is ",
                                                      common::RunStateName(run->state()),
                                                      "; wait until it has finished"));
  }
  return run;
}

grpc::Status CollectiveTestService::SetBaseline(grpc::ServerContext* context,
                                                const v1::SetBaselineRequest* request,
                                                v1::Baseline* response) {
  auto caller = auth_.Require(*context, Role::kRunner, "SetBaseline");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (absl::Status s = ValidateRunId(request->run_id()); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<std::string> name = NormalizeBaselineName("name", request->name());
  if (!name.ok()) return ToGrpcStatus(name.status());
  absl::StatusOr<v1::RunResult> run = FinishedRun(request->run_id(), "run_id");
  if (!run.ok()) return ToGrpcStatus(run.status());
  // A cancelled or interrupted run lacks cases, and a failed one has none: comparing against it
  // would report every later case as new.
  if (run->state() != v1::RUN_STATE_DONE) {
    return ToGrpcStatus(absl::FailedPreconditionError(
        absl::StrCat("run_id: run ", run->run_id(), " is ", common::RunStateName(run->state()),
                     "; only a DONE run can be a baseline")));
  }
  if (run->machine().key().empty()) {
    return ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
        "run_id: run ", run->run_id(), " has no machine identity, so it belongs to no machine")));
  }
  v1::Baseline baseline;
  baseline.set_name(*name);
  baseline.set_machine_key(run->machine().key());
  baseline.set_run_id(run->run_id());
  baseline.set_set_unix_ms(absl::ToUnixMillis(absl::Now()));
  baseline.set_hostname(run->machine().hostname());
  // A runner may replace only the baselines it owns, an admin any; and one owner's names are
  // bounded, since each keeps its run from retention (docs/history.md, "Baselines and their
  // owners"). Owned under the caller's key, so that with authentication off a client that
  // reconnects (a new peer port) is still the same owner and the bound holds.
  const store::BaselineSetter setter{CallerKey(caller->name), caller->role >= Role::kAdmin,
                                     options_.max_baselines_per_owner};
  absl::StatusOr<v1::Baseline> stored = history_.store()->SetBaseline(baseline, setter);
  if (!stored.ok()) return ToGrpcStatus(stored.status());
  *response = *std::move(stored);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::ListBaselines(grpc::ServerContext* context,
                                                  const v1::ListBaselinesRequest* request,
                                                  v1::ListBaselinesResponse* response) {
  if (auto caller = auth_.Require(*context, Role::kViewer, "ListBaselines"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  if (absl::Status s = ValidateListBaselines(*request); !s.ok()) return ToGrpcStatus(s);
  auto baselines = history_.store()->ListBaselines(request->machine_key());
  if (!baselines.ok()) return ToGrpcStatus(baselines.status());
  for (v1::Baseline& b : *baselines) *response->add_baselines() = std::move(b);
  return grpc::Status::OK;
}

grpc::Status CollectiveTestService::Compare(grpc::ServerContext* context,
                                            const v1::CompareRequest* request,
                                            v1::CompareResponse* response) {
  if (auto caller = auth_.Require(*context, Role::kViewer, "Compare"); !caller.ok()) {
    return ToGrpcStatus(caller.status());
  }
  absl::StatusOr<v1::CompareRequest> normalized = NormalizeCompare(*request);
  if (!normalized.ok()) return ToGrpcStatus(normalized.status());
  absl::StatusOr<v1::RunResult> b = FinishedRun(normalized->run_b(), "run_b");
  if (!b.ok()) return ToGrpcStatus(b.status());
  std::string run_a = normalized->run_a();
  std::string baseline_name;
  if (run_a.empty()) {
    absl::StatusOr<v1::Baseline> baseline =
        history_.store()->GetBaseline(b->machine().key(), normalized->baseline());
    if (!baseline.ok()) return ToGrpcStatus(baseline.status());
    run_a = baseline->run_id();
    baseline_name = baseline->name();
  }
  absl::StatusOr<v1::RunResult> a = FinishedRun(run_a, "run_a");
  if (!a.ok()) return ToGrpcStatus(a.status());
  // Ranks sharing a GPU and ranks on separate GPUs time different things: refused, not judged.
  const absl::Status alike =
      baseline_name.empty()
          ? CheckPlacedAlike(*a, absl::StrCat("run ", a->run_id()), *b,
                             absl::StrCat("run ", b->run_id()))
          : CheckPlacedAlike(*b, absl::StrCat("run ", b->run_id()), *a,
                             absl::StrCat("baseline ", baseline_name, " (run ", a->run_id(), ")"));
  if (!alike.ok()) return ToGrpcStatus(alike);
  *response = CompareRuns(*a, *b, normalized->threshold());
  if (normalized->run_a().empty()) response->set_baseline(normalized->baseline());
  if (options_.metrics != nullptr) options_.metrics->ObserveComparison(*response, *b);
  return grpc::Status::OK;
}

}  // namespace colltest::server
