// Consumes the Sweep RPC's event stream: shows its progress on stderr-like output and keeps what
// is needed to report the run when the stream ends.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/commands/case_eta.h"
#include "client/commands/progress.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// Number of cases a spec expands to, or 0 when it depends on server defaults (no variants, m or n).
uint32_t ExpectedCaseCount(const v1::SweepSpec& spec);

// "[3/12] lamport eager m=64 n=7168: OK 12.3 us". `total` 0 prints as "?". A non-empty `timing`
// goes in parentheses after the status and before the case's message, where it lines up from
// case to case: "[3/12] ...: OK 12.3 us (elapsed 12.3s, ETA 40s)".
// `color`: the status painted (client/format/color.h).
std::string ProgressLine(const v1::CaseResult& c, uint32_t done, uint32_t total,
                         absl::string_view timing = "", bool color = false);

// "[3/12] 25% elapsed 4.1s ETA 12s"; "[3/?] elapsed 4.1s ETA ?" while the total is unknown.
// `eta` replaces the pace-so-far estimate of FormatEta when given.
std::string RunStatusLine(uint32_t done, uint32_t total, absl::Duration elapsed,
                          absl::string_view eta = "");

enum class SweepProgressStyle {
  kCaseLines,   // `sweep`: a line per case with its verdict, elapsed time and ETA
  kStatusLine,  // `run`: one status line of counts and times (redrawn in place on a terminal)
};

struct SweepProgressOptions {
  ProgressMode mode = ProgressMode::kLines;
  SweepProgressStyle style = SweepProgressStyle::kCaseLines;
  std::function<absl::Time()> now = [] { return absl::Now(); };  // a fixed clock in tests
  // The spec sent: the ETA then weighs each remaining case by its size (case_eta.h) instead of
  // counting cases.
  std::optional<v1::SweepSpec> plan;
  bool color = false;  // verdicts painted (ColorFor of progress.h)
};

class SweepCollector {
 public:
  // `expected_total` is used until the server reports its own total. Elapsed time counts from
  // construction and starts again when the run leaves the queue, so that the ETA is the pace of
  // the cases, not of the wait before them.
  SweepCollector(std::ostream* progress, uint32_t expected_total,
                 SweepProgressOptions options = {});

  void OnEvent(const v1::SweepEvent& event);
  // Ends a line left open on a terminal; the destructor does it too.
  void Finish() { line_.End(); }

  bool has_summary() const { return summary_.has_value(); }
  // The server's summary when it arrived; otherwise a run assembled from the streamed cases (state
  // left unspecified, since the client cannot know it).
  v1::RunResult Result() const;

 private:
  void OnProgress(const v1::SweepProgress& p);
  void OnResult(const v1::CaseResult& c);
  // The ETA after `done` cases: from the cases' sizes when the plan matches the total.
  std::string Eta(absl::Duration elapsed) const;

  SweepProgressOptions options_;
  StatusLine line_;
  absl::Time start_;
  absl::Time last_case_end_;
  std::optional<CaseEta> eta_;
  uint32_t total_;
  uint32_t received_ = 0;
  std::string run_id_;
  v1::RunState last_state_ = v1::RUN_STATE_UNSPECIFIED;
  uint32_t last_queue_position_ = 0;
  v1::RunResult partial_;
  std::optional<v1::RunResult> summary_;
};

}  // namespace colltest::client
