#include "http/request_admission.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "http/status_map.h"

namespace colltest::http {

BodyAdmission::Ticket::Ticket(BodyAdmission* admission, std::string peer)
    : admission_(admission), peer_(std::move(peer)) {}

BodyAdmission::Ticket::Ticket(Ticket&& other) noexcept
    : admission_(std::exchange(other.admission_, nullptr)), peer_(std::move(other.peer_)) {}

BodyAdmission::Ticket::~Ticket() {
  if (admission_ != nullptr) admission_->Release(peer_);
}

absl::StatusOr<BodyAdmission::Ticket> BodyAdmission::Admit(const std::string& peer) {
  absl::MutexLock lock(&mu_);
  auto found = per_peer_.find(peer);
  const int from_peer = found == per_peer_.end() ? 0 : found->second;
  if (from_peer >= limits_.max_readers_per_peer) {
    return WithHttpStatus(absl::ResourceExhaustedError(absl::StrCat(
                              "too many requests from ", peer, " sending a body at once: at most ",
                              limits_.max_readers_per_peer, " (--http-max-body-readers-per-peer)")),
                          429);
  }
  if (readers_ >= limits_.max_readers) {
    return WithHttpStatus(
        absl::UnavailableError(absl::StrCat("too many requests sending a body at once: at most ",
                                            limits_.max_readers, " (--http-max-body-readers)")),
        503);
  }
  ++readers_;
  ++per_peer_[peer];
  return Ticket(this, peer);
}

int BodyAdmission::readers() const {
  absl::MutexLock lock(&mu_);
  return readers_;
}

void BodyAdmission::Release(const std::string& peer) {
  absl::MutexLock lock(&mu_);
  --readers_;
  auto found = per_peer_.find(peer);
  if (found != per_peer_.end() && --found->second <= 0) per_peer_.erase(found);
}

}  // namespace colltest::http
