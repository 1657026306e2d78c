#include "server/api/stream_observer.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/net/peer_names.h"
#include "spdlog/spdlog.h"

namespace colltest::server {

namespace v1 = ::colltest::v1;

bool StreamObserver::ClientGone() {
  return write_failed_ || send_timed_out_.load() || context_->IsCancelled();
}

std::string StreamObserver::ClientGoneReason() {
  if (send_timed_out_.load()) {
    return absl::StrCat(kClientStoppedReading, " (a send waited ",
                        absl::FormatDuration(watchdog_->timeout()), ")");
  }
  return RunObserver::ClientGoneReason();
}

void StreamObserver::OnQueued(const std::string& run_id, uint32_t runs_ahead, uint32_t total) {
  Progress(run_id, v1::RUN_STATE_QUEUED, 0, total, runs_ahead);
}

void StreamObserver::OnStarted(const std::string& run_id, uint32_t total) {
  Progress(run_id, v1::RUN_STATE_RUNNING, 0, total, 0);
}

void StreamObserver::OnCase(const std::string& run_id, const v1::CaseResult& result, uint32_t done,
                            uint32_t total) {
  v1::SweepEvent event;
  event.set_run_id(run_id);
  *event.mutable_result() = result;
  Write(event);
  Progress(run_id, v1::RUN_STATE_RUNNING, done, total, 0);
}

bool StreamObserver::Write(const v1::SweepEvent& event) {
  if (write_failed_) return false;
  const uint64_t armed = watchdog_->Arm([this] {
    if (!send_timed_out_.exchange(true)) {
      spdlog::warn("{}: {}: cancelling its call", PeerAddress(context_->peer()),
                   kClientStoppedReading);
    }
    context_->TryCancel();
  });
  const bool sent = writer_->Write(event);
  watchdog_->Disarm(armed);
  if (!sent || send_timed_out_.load()) write_failed_ = true;
  return !write_failed_;
}

void StreamObserver::Progress(const std::string& run_id, v1::RunState state, uint32_t done,
                              uint32_t total, uint32_t runs_ahead) {
  v1::SweepEvent event;
  event.set_run_id(run_id);
  v1::SweepProgress* p = event.mutable_progress();
  p->set_state(state);
  p->set_done(done);
  p->set_total(total);
  p->set_queue_position(runs_ahead);
  Write(event);
}

}  // namespace colltest::server
