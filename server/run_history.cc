#include "server/run_history.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "server/machine_identity.h"
#include "server/run_id.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

absl::Status NotFound(const std::string& run_id) {
  return absl::NotFoundError(absl::StrCat("run_id = \"", run_id, "\": no such run"));
}

}  // namespace

bool IsTerminal(v1::RunState state) {
  return state == v1::RUN_STATE_DONE || state == v1::RUN_STATE_CANCELLED ||
         state == v1::RUN_STATE_FAILED || state == v1::RUN_STATE_INTERRUPTED;
}

RunHistory::RunHistory(store::RunStore* store, v1::MachineIdentity machine, bool time_sliced)
    : store_(store), machine_(std::move(machine)), time_sliced_(time_sliced) {}

absl::StatusOr<std::string> RunHistory::Create(const v1::SweepSpec& spec,
                                               const std::string& backend,
                                               const std::string& owner) {
  Active entry;
  v1::RunResult& run = entry.run;
  run.set_run_id(NewRunId());
  run.set_state(v1::RUN_STATE_QUEUED);
  *run.mutable_spec() = spec;
  run.set_backend(backend);
  run.set_created_unix_ms(NowMs());
  run.set_owner(owner);
  if (machine_.ByteSizeLong() > 0) *run.mutable_machine() = machine_;
  run.set_ranks_per_gpu(RanksPerGpu(machine_, spec.devices()));
  run.set_time_sliced(time_sliced_ && run.ranks_per_gpu() > 1);
  if (absl::Status stored = store_->InsertRun(run); !stored.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the run cannot be recorded in the history: ", stored.message()));
  }
  std::string id = run.run_id();
  std::lock_guard<std::mutex> lock(mu_);
  active_.emplace(id, std::move(entry));
  return id;
}

absl::Status RunHistory::MarkRunning(const std::string& run_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = active_.find(run_id);
    if (it == active_.end()) return NotFound(run_id);
    if (it->second.run.state() != v1::RUN_STATE_QUEUED) {
      return absl::FailedPreconditionError(absl::StrCat(
          "run ", run_id, " is ", common::RunStateName(it->second.run.state()), ", not QUEUED"));
    }
    it->second.run.set_state(v1::RUN_STATE_RUNNING);
  }
  return store_->SetState(run_id, v1::RUN_STATE_RUNNING, "", 0);
}

absl::Status RunHistory::AddCase(const std::string& run_id, const v1::CaseResult& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = active_.find(run_id);
    if (it == active_.end()) return NotFound(run_id);
    if (it->second.run.state() != v1::RUN_STATE_RUNNING) {
      return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " is not RUNNING"));
    }
    *it->second.run.add_cases() = result;
  }
  return store_->AddCase(run_id, result);
}

absl::StatusOr<v1::RunResult> RunHistory::Finish(const std::string& run_id, v1::RunState state,
                                                 const std::string& message) {
  if (!IsTerminal(state)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a run cannot finish in state ", common::RunStateName(state)));
  }
  v1::RunResult run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = active_.find(run_id);
    if (it != active_.end()) {
      run = std::move(it->second.run);
      active_.erase(it);
    }
  }
  if (run.run_id().empty()) {
    COLLTEST_ASSIGN_OR_RETURN(v1::RunResult stored, store_->GetRun(run_id));
    return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " has already finished (",
                                                      common::RunStateName(stored.state()), ")"));
  }
  run.set_state(state);
  run.set_message(message);
  run.set_finished_unix_ms(NowMs());
  // The reply does not depend on the database: a run that could not be stored is still answered.
  (void)store_->SetState(run_id, state, message, run.finished_unix_ms());
  return run;
}

absl::StatusOr<v1::RunResult> RunHistory::Get(const std::string& run_id) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = active_.find(run_id); it != active_.end()) return it->second.run;
  }
  return store_->GetRun(run_id);
}

absl::StatusOr<std::string> RunHistory::Owner(const std::string& run_id) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = active_.find(run_id); it != active_.end()) return it->second.run.owner();
  }
  COLLTEST_ASSIGN_OR_RETURN(v1::RunResult run, store_->GetRun(run_id));
  return run.owner();
}

absl::StatusOr<v1::ListRunsResponse> RunHistory::List(const v1::ListRunsRequest& request) const {
  return store_->ListRuns(request);
}

absl::StatusOr<v1::RunState> RunHistory::RequestCancel(const std::string& run_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = active_.find(run_id); it != active_.end()) {
      it->second.cancel_requested = true;
      return it->second.run.state();
    }
  }
  COLLTEST_ASSIGN_OR_RETURN(v1::RunResult run, store_->GetRun(run_id));
  return run.state();
}

bool RunHistory::CancelRequested(const std::string& run_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(run_id);
  return it != active_.end() && it->second.cancel_requested;
}

size_t RunHistory::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_.size();
}

}  // namespace colltest::server
