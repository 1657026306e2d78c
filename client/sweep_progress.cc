#include "client/sweep_progress.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/names.h"
#include "client/result_view.h"

namespace colltest::client {

uint32_t ExpectedCaseCount(const v1::SweepSpec& spec) {
  // Empty modes mean eager only; the other lists have server-chosen defaults.
  const uint64_t modes = spec.modes_size() == 0 ? 1 : spec.modes_size();
  const uint64_t count =
      static_cast<uint64_t>(spec.m_size()) * spec.n_size() * spec.variants_size() * modes;
  return count > std::numeric_limits<uint32_t>::max() ? 0 : static_cast<uint32_t>(count);
}

std::string ProgressLine(const v1::CaseResult& c, uint32_t done, uint32_t total) {
  std::string line = absl::StrCat(
      "[", done, "/", total == 0 ? std::string("?") : absl::StrCat(total), "] ", VariantLabel(c),
      " ", ModeName(c.mode()), " m=", c.m(), " n=", c.n(), ": ", CaseStatusName(c.status()));
  if (c.timing().median_us() > 0)
    absl::StrAppend(&line, absl::StrFormat(" %.1f us", c.timing().median_us()));
  if (!c.message().empty()) absl::StrAppend(&line, ": ", c.message());
  return line;
}

SweepCollector::SweepCollector(std::ostream* progress, uint32_t expected_total)
    : progress_(progress), total_(expected_total) {}

void SweepCollector::OnEvent(const v1::SweepEvent& event) {
  if (!event.run_id().empty() && run_id_.empty()) {
    run_id_ = event.run_id();
    partial_.set_run_id(run_id_);
    // Printed once up front so that a user can `colltest cancel` a long sweep from another shell.
    *progress_ << "run " << run_id_ << "\n";
  }
  switch (event.event_case()) {
    case v1::SweepEvent::kProgress: {
      const v1::SweepProgress& p = event.progress();
      if (p.total() > 0) total_ = p.total();
      // Only transitions are printed: the server may repeat progress events while a run waits.
      if (p.state() == v1::RUN_STATE_QUEUED &&
          (last_state_ != v1::RUN_STATE_QUEUED || p.queue_position() != last_queue_position_)) {
        *progress_ << "queued: " << p.queue_position() << " run(s) ahead\n";
      } else if (p.state() != last_state_ && p.state() == v1::RUN_STATE_RUNNING) {
        *progress_ << "running\n";
      }
      last_state_ = p.state();
      last_queue_position_ = p.queue_position();
      break;
    }
    case v1::SweepEvent::kResult:
      ++received_;
      *partial_.add_cases() = event.result();
      *progress_ << ProgressLine(event.result(), received_, total_) << "\n";
      break;
    case v1::SweepEvent::kSummary:
      summary_ = event.summary();
      if (summary_->run_id().empty()) summary_->set_run_id(run_id_);
      break;
    case v1::SweepEvent::EVENT_NOT_SET:
      break;
  }
  progress_->flush();
}

v1::RunResult SweepCollector::Result() const { return summary_.has_value() ? *summary_ : partial_; }

}  // namespace colltest::client
