#include "server/run_history.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/io/coded_stream.h"
#include "server/names.h"
#include "server/run_id.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// What one more element of a repeated message field adds to its parent's serialized size: the
// element, its length prefix and the field's one-byte tag.
uint64_t RepeatedElementBytes(const google::protobuf::Message& element) {
  const size_t size = element.ByteSizeLong();
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(size) + size;
}

v1::RunSummary Summarize(const v1::RunResult& run) {
  v1::RunSummary s;
  s.set_run_id(run.run_id());
  s.set_state(run.state());
  s.set_cases(static_cast<uint32_t>(run.cases_size()));
  s.set_created_unix_ms(run.created_unix_ms());
  s.set_label(run.spec().label());
  s.set_owner(run.owner());
  for (const v1::CaseResult& c : run.cases()) {
    switch (c.status()) {
      case v1::CASE_STATUS_OK:
        s.set_ok(s.ok() + 1);
        break;
      case v1::CASE_STATUS_WRONG:
      case v1::CASE_STATUS_HANG:
      case v1::CASE_STATUS_ERROR:
        s.set_failed(s.failed() + 1);
        break;
      default:
        break;
    }
  }
  return s;
}

}  // namespace

bool IsTerminal(v1::RunState state) {
  return state == v1::RUN_STATE_DONE || state == v1::RUN_STATE_CANCELLED ||
         state == v1::RUN_STATE_FAILED;
}

std::string RunHistory::Create(const v1::SweepSpec& spec, const std::string& backend,
                               const std::string& owner) {
  std::string id = NewRunId();
  Entry entry;
  entry.active = std::make_unique<v1::RunResult>();
  v1::RunResult& run = *entry.active;
  run.set_run_id(id);
  run.set_state(v1::RUN_STATE_QUEUED);
  *run.mutable_spec() = spec;
  run.set_backend(backend);
  run.set_created_unix_ms(NowMs());
  run.set_owner(owner);
  entry.bytes = run.ByteSizeLong();
  std::lock_guard<std::mutex> lock(mu_);
  bytes_ += entry.bytes;
  auto pos = order_.insert(order_.end(), id);
  runs_.emplace(id, std::make_pair(std::move(entry), pos));
  EvictLocked();
  return id;
}

bool RunHistory::OverBoundsLocked() const {
  return runs_.size() > capacity_ || bytes_ > max_bytes_;
}

void RunHistory::EvictLocked(const std::string& keep) {
  // Finished runs go first, oldest first. Active runs are never dropped (their executor still
  // writes to them); they are bounded by the server's threads, so the excess is temporary.
  for (auto it = order_.begin(); OverBoundsLocked() && it != order_.end();) {
    auto run = runs_.find(*it);
    if (IsTerminal(run->second.first.state()) && *it != keep) {
      bytes_ -= run->second.first.bytes;
      runs_.erase(run);
      it = order_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::Status RunHistory::NotFound(const std::string& run_id) const {
  return absl::NotFoundError(absl::StrCat("run_id = \"", run_id,
                                          "\": no such run (the history keeps the last ", capacity_,
                                          " runs, at most ", max_bytes_, " bytes)"));
}

absl::StatusOr<RunHistory::Entry*> RunHistory::Find(const std::string& run_id) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return NotFound(run_id);
  return &it->second.first;
}

absl::StatusOr<RunHistory::Entry*> RunHistory::FindIn(const std::string& run_id,
                                                      v1::RunState want) {
  auto entry = Find(run_id);
  if (!entry.ok()) return entry.status();
  const v1::RunState state = (*entry)->state();
  if (state != want) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " is ", RunStateName(state), ", not ", RunStateName(want)));
  }
  return entry;
}

absl::Status RunHistory::MarkRunning(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto entry = FindIn(run_id, v1::RUN_STATE_QUEUED);
  if (!entry.ok()) return entry.status();
  (*entry)->active->set_state(v1::RUN_STATE_RUNNING);
  return absl::OkStatus();
}

absl::Status RunHistory::AddCase(const std::string& run_id, const v1::CaseResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  auto entry = FindIn(run_id, v1::RUN_STATE_RUNNING);
  if (!entry.ok()) return entry.status();
  *(*entry)->active->add_cases() = result;
  const uint64_t added = RepeatedElementBytes(result);
  (*entry)->bytes += added;
  bytes_ += added;
  // A long sweep may outgrow the bound on its own: older finished runs make room for it.
  EvictLocked();
  return absl::OkStatus();
}

absl::Status RunHistory::Finish(const std::string& run_id, v1::RunState state,
                                const std::string& message) {
  if (!IsTerminal(state)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Finish: ", RunStateName(state), " is not a final state"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto entry = Find(run_id);
  if (!entry.ok()) return entry.status();
  Entry& e = **entry;
  if (IsTerminal(e.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " already finished as ", RunStateName(e.state())));
  }
  e.active->set_state(state);
  e.active->set_message(message);
  e.active->set_finished_unix_ms(NowMs());
  // From here on the run is its bytes: exact (the incremental sums are exact too; this also covers
  // the message), and sized to them, since SerializeToString resizes an empty string once. With the
  // summary and the freeing of the message this takes about 2 ms for 4,096 cases.
  auto serialized = std::make_shared<std::string>();
  e.active->SerializeToString(serialized.get());
  e.summary = Summarize(*e.active);
  e.active.reset();
  bytes_ -= e.bytes;
  e.bytes = serialized->size();
  bytes_ += e.bytes;
  e.finished = std::move(serialized);
  // The run just finished stays even when it alone exceeds the bound: its caller reads it back
  // right away. The next change to the history makes room.
  EvictLocked(run_id);
  return absl::OkStatus();
}

absl::StatusOr<v1::RunResult> RunHistory::Get(const std::string& run_id) const {
  std::shared_ptr<const std::string> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return NotFound(run_id);
    const Entry& entry = it->second.first;
    if (entry.active) return *entry.active;
    finished = entry.finished;
  }
  // Parsing a run of 4,096 cases takes about 2 ms (390 KB, 2 cores): outside the lock, the other
  // runs' cases need not wait for it.
  v1::RunResult run;
  if (!run.ParseFromString(*finished)) {
    return absl::InternalError(absl::StrCat("run ", run_id, ": stored bytes do not parse"));
  }
  return run;
}

absl::StatusOr<std::string> RunHistory::Owner(const std::string& run_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return NotFound(run_id);
  const Entry& entry = it->second.first;
  return entry.active ? entry.active->owner() : entry.summary.owner();
}

std::vector<v1::RunSummary> RunHistory::List(uint32_t limit) const {
  if (limit == 0) limit = kDefaultListLimit;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::RunSummary> out;
  out.reserve(std::min<size_t>(limit, order_.size()));
  for (auto it = order_.rbegin(); it != order_.rend() && out.size() < limit; ++it) {
    const Entry& entry = runs_.at(*it).first;
    out.push_back(entry.active ? Summarize(*entry.active) : entry.summary);
  }
  return out;
}

absl::StatusOr<v1::RunState> RunHistory::RequestCancel(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto entry = Find(run_id);
  if (!entry.ok()) return entry.status();
  const v1::RunState state = (*entry)->state();
  if (!IsTerminal(state)) (*entry)->cancel_requested = true;
  return state;
}

bool RunHistory::CancelRequested(const std::string& run_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(run_id);
  return it != runs_.end() && it->second.first.cancel_requested;
}

size_t RunHistory::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_.size();
}

uint64_t RunHistory::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t RunHistory::decoded_runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : runs_) n += entry.first.active != nullptr;
  return n;
}

}  // namespace colltest::server
