// Consumes the Sweep RPC's event stream: prints a progress line per event to stderr-like output and
// keeps what is needed to report the run when the stream ends.
#ifndef COLLTEST_CLIENT_SWEEP_PROGRESS_H_
#define COLLTEST_CLIENT_SWEEP_PROGRESS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// Number of cases a spec expands to, or 0 when it depends on server defaults (no variants, m or n).
uint32_t ExpectedCaseCount(const v1::SweepSpec& spec);

// "[3/12] lamport eager m=64 n=7168: OK 12.3 us". `total` 0 prints as "?".
std::string ProgressLine(const v1::CaseResult& c, uint32_t done, uint32_t total);

class SweepCollector {
 public:
  // `expected_total` is used until the server reports its own total.
  SweepCollector(std::ostream* progress, uint32_t expected_total);

  void OnEvent(const v1::SweepEvent& event);

  bool has_summary() const { return summary_.has_value(); }
  // The server's summary when it arrived; otherwise a run assembled from the streamed cases (state
  // left unspecified, since the client cannot know it).
  v1::RunResult Result() const;

 private:
  std::ostream* progress_;
  uint32_t total_;
  uint32_t received_ = 0;
  std::string run_id_;
  v1::RunState last_state_ = v1::RUN_STATE_UNSPECIFIED;
  uint32_t last_queue_position_ = 0;
  v1::RunResult partial_;
  std::optional<v1::RunResult> summary_;
};

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_SWEEP_PROGRESS_H_
