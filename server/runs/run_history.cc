#include "server/runs/run_history.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "server/devices/machine_identity.h"
#include "server/net/run_id.h"
#include "spdlog/spdlog.h"
#include "store/database.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

absl::Status NotFound(const std::string& run_id) {
  return absl::NotFoundError(absl::StrCat("run_id = \"", run_id, "\": no such run"));
}

// The directory the database lives in, as the errors name it (where space must be freed).
std::string StateDirOf(const std::string& database_path) {
  if (database_path == ":memory:") return "in memory";
  return std::filesystem::path(database_path).parent_path().string();
}

}  // namespace

bool IsTerminal(v1::RunState state) {
  return state == v1::RUN_STATE_DONE || state == v1::RUN_STATE_CANCELLED ||
         state == v1::RUN_STATE_FAILED || state == v1::RUN_STATE_INTERRUPTED;
}

RunHistory::RunHistory(store::RunStore* store, v1::MachineIdentity machine, bool time_sliced,
                       Metrics* metrics)
    : store_(store),
      machine_(std::move(machine)),
      time_sliced_(time_sliced),
      metrics_(metrics),
      state_dir_(StateDirOf(store->path())) {}

absl::Status RunHistory::WriteError(const absl::Status& stored, const std::string& what) {
  if (metrics_ != nullptr) metrics_->ObserveHistoryWriteError();
  return absl::Status(stored.code(),
                      absl::StrCat("history: cannot ", what, ": ", store::SqliteMessageOf(stored),
                                   " (state dir ", state_dir_, ")"));
}

void RunHistory::RetryUnrecorded() {
  std::map<std::string, Unrecorded> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unrecorded_.empty()) return;
    pending = unrecorded_;
  }
  for (const auto& [run_id, final_state] : pending) {
    if (!store_
             ->SetState(run_id, final_state.state, final_state.message,
                        final_state.finished_unix_ms)
             .ok()) {
      continue;  // still refused: kept, and counted when it was first refused
    }
    spdlog::info("history: the final state of run {} is recorded now ({})", run_id,
                 std::string(common::RunStateName(final_state.state)));
    std::lock_guard<std::mutex> lock(mu_);
    unrecorded_.erase(run_id);
  }
}

void RunHistory::OverlayUnrecorded(v1::RunResult& run) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = unrecorded_.find(run.run_id());
  if (it == unrecorded_.end()) return;
  run.set_state(it->second.state);
  run.set_message(it->second.message);
  run.set_finished_unix_ms(it->second.finished_unix_ms);
}

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
  RetryUnrecorded();
  if (absl::Status stored = store_->InsertRun(run); !stored.ok()) {
    const absl::Status error = WriteError(stored, absl::StrCat("record run ", run.run_id()));
    return absl::UnavailableError(
        absl::StrCat("the run cannot be recorded in the history: ", error.message()));
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
  absl::Status stored = store_->SetState(run_id, v1::RUN_STATE_RUNNING, "", 0);
  if (!stored.ok()) return WriteError(stored, absl::StrCat("mark run ", run_id, " RUNNING"));
  return absl::OkStatus();
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
  absl::Status stored = store_->AddCase(run_id, result);
  if (!stored.ok()) {
    return WriteError(stored, absl::StrCat("store case ", result.index(), " of run ", run_id));
  }
  return absl::OkStatus();
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
  RetryUnrecorded();
  absl::Status stored = store_->SetState(run_id, state, message, run.finished_unix_ms());
  if (stored.ok()) return run;
  // The reply does not depend on the database, but must not pass for a stored run: a run that
  // ended DONE and cannot say so in the history is FAILED.
  const absl::Status error = WriteError(stored, absl::StrCat("record the end of run ", run_id));
  spdlog::error("{}", std::string(error.message()));
  if (state == v1::RUN_STATE_DONE) run.set_state(v1::RUN_STATE_FAILED);
  run.set_message(message.empty() ? std::string(error.message())
                                  : absl::StrCat(message, "; ", error.message()));
  std::lock_guard<std::mutex> lock(mu_);
  unrecorded_[run_id] = Unrecorded{run.state(), run.message(), run.finished_unix_ms()};
  return run;
}

absl::StatusOr<v1::RunResult> RunHistory::Get(const std::string& run_id) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = active_.find(run_id); it != active_.end()) return it->second.run;
  }
  COLLTEST_ASSIGN_OR_RETURN(v1::RunResult run, store_->GetRun(run_id));
  OverlayUnrecorded(run);
  return run;
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
  COLLTEST_ASSIGN_OR_RETURN(v1::ListRunsResponse response, store_->ListRuns(request));
  std::lock_guard<std::mutex> lock(mu_);
  if (unrecorded_.empty()) return response;
  for (v1::RunSummary& summary : *response.mutable_runs()) {
    auto it = unrecorded_.find(summary.run_id());
    if (it == unrecorded_.end()) continue;
    summary.set_state(it->second.state);
    summary.set_finished_unix_ms(it->second.finished_unix_ms);
  }
  return response;
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
  OverlayUnrecorded(run);
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
