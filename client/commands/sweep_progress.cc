#include "client/commands/sweep_progress.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/format/color.h"
#include "client/format/result_view.h"
#include "common/names.h"

namespace colltest::client {

uint32_t ExpectedCaseCount(const v1::SweepSpec& spec) {
  // Empty modes mean eager only; the other lists have server-chosen defaults.
  const uint64_t modes = spec.modes_size() == 0 ? 1 : spec.modes_size();
  const uint64_t count =
      static_cast<uint64_t>(spec.m_size()) * spec.n_size() * spec.variants_size() * modes;
  return count > std::numeric_limits<uint32_t>::max() ? 0 : static_cast<uint32_t>(count);
}

std::string ProgressLine(const v1::CaseResult& c, uint32_t done, uint32_t total,
                         absl::string_view timing, bool color) {
  const absl::string_view status = common::CaseStatusName(c.status());
  std::string line =
      absl::StrCat("[", done, "/", total == 0 ? std::string("?") : absl::StrCat(total), "] ",
                   VariantLabel(c), " ", common::ModeName(c.mode()), " m=", c.m(), " n=", c.n(),
                   ": ", color ? PaintVerdict(status) : std::string(status));
  if (c.timing().median_us() > 0)
    absl::StrAppend(&line, absl::StrFormat(" %.1f us", c.timing().median_us()));
  if (!timing.empty()) absl::StrAppend(&line, " (", timing, ")");
  if (!c.message().empty()) absl::StrAppend(&line, ": ", c.message());
  return line;
}

std::string RunStatusLine(uint32_t done, uint32_t total, absl::Duration elapsed,
                          absl::string_view eta) {
  if (total == 0) {
    return absl::StrCat("[", done, "/?] elapsed ", FormatElapsed(elapsed), " ETA ?");
  }
  return absl::StrCat("[", done, "/", total, "] ", uint64_t{done} * 100 / total, "% elapsed ",
                      FormatElapsed(elapsed), " ETA ",
                      eta.empty() ? FormatEta(elapsed, done, total) : std::string(eta));
}

SweepCollector::SweepCollector(std::ostream* progress, uint32_t expected_total,
                               SweepProgressOptions options)
    : options_(std::move(options)),
      line_(progress, options_.mode),
      start_(options_.now()),
      last_case_end_(start_),
      total_(expected_total) {
  if (options_.plan.has_value()) eta_.emplace(*options_.plan);
}

void SweepCollector::OnEvent(const v1::SweepEvent& event) {
  if (!event.run_id().empty() && run_id_.empty()) {
    run_id_ = event.run_id();
    partial_.set_run_id(run_id_);
    // Printed once up front so that a user can `colltest cancel` a long sweep from another shell.
    line_.Print(absl::StrCat("run ", run_id_));
  }
  switch (event.event_case()) {
    case v1::SweepEvent::kProgress:
      OnProgress(event.progress());
      break;
    case v1::SweepEvent::kResult:
      OnResult(event.result());
      break;
    case v1::SweepEvent::kSummary:
      summary_ = event.summary();
      if (summary_->run_id().empty()) summary_->set_run_id(run_id_);
      break;
    case v1::SweepEvent::EVENT_NOT_SET:
      break;
  }
}

void SweepCollector::OnProgress(const v1::SweepProgress& p) {
  if (p.total() > 0) total_ = p.total();
  const bool case_lines = options_.style == SweepProgressStyle::kCaseLines;
  // Only transitions are shown: the server may repeat progress events while a run waits.
  if (p.state() == v1::RUN_STATE_QUEUED &&
      (last_state_ != v1::RUN_STATE_QUEUED || p.queue_position() != last_queue_position_)) {
    const std::string text = absl::StrCat("queued: ", p.queue_position(), " run(s) ahead");
    case_lines ? line_.Print(text) : line_.Draw(text);
  } else if (p.state() != last_state_ && p.state() == v1::RUN_STATE_RUNNING) {
    if (received_ == 0) start_ = last_case_end_ = options_.now();
    case_lines ? line_.Print("running") : line_.Draw("running");
  }
  last_state_ = p.state();
  last_queue_position_ = p.queue_position();
}

void SweepCollector::OnResult(const v1::CaseResult& c) {
  ++received_;
  *partial_.add_cases() = c;
  const absl::Time now = options_.now();
  if (eta_.has_value()) eta_->Finished(c, now - last_case_end_);
  last_case_end_ = now;
  const absl::Duration elapsed = now - start_;
  if (options_.style == SweepProgressStyle::kStatusLine) {
    line_.Draw(RunStatusLine(received_, total_, elapsed, Eta(elapsed)));
    return;
  }
  line_.Print(ProgressLine(c, received_, total_,
                           absl::StrCat("elapsed ", FormatElapsed(elapsed), ", ETA ", Eta(elapsed)),
                           options_.color));
}

std::string SweepCollector::Eta(absl::Duration elapsed) const {
  if (eta_.has_value() && total_ != 0 && eta_->planned() == total_ && received_ < total_) {
    if (std::optional<absl::Duration> rest = eta_->Remaining()) return FormatRemaining(*rest);
  }
  return FormatEta(elapsed, received_, total_);
}

v1::RunResult SweepCollector::Result() const { return summary_.has_value() ? *summary_ : partial_; }

}  // namespace colltest::client
