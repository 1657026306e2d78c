// How many requests may be reading a body at once, in all and from one peer address. CivetWeb
// serves a connection on one thread from its first byte to its last, so a client that trickles a
// body holds a thread for as long as the body takes; without a cap, as many trickling connections
// as there are threads would leave none for /healthz, /metrics, the API's GETs or the dashboard.
// The cap is below the thread count, so the threads above it are a reserve body readers can never
// take (GatewayOptions::max_body_readers).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace colltest::http {

struct AdmissionLimits {
  int max_readers = 16;          // requests reading a body at once, every peer together
  int max_readers_per_peer = 4;  // of them from one peer address
};

class BodyAdmission {
 public:
  explicit BodyAdmission(AdmissionLimits limits) : limits_(limits) {}

  // A place among the body readers, held until destroyed.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    ~Ticket();

   private:
    friend class BodyAdmission;
    Ticket(BodyAdmission* admission, std::string peer);
    BodyAdmission* admission_;
    std::string peer_;
  };

  // A ticket for a request from `peer` (its address, without the port), or at once, without
  // waiting: RESOURCE_EXHAUSTED answered 429 when the peer has max_readers_per_peer bodies in
  // flight, UNAVAILABLE answered 503 when all peers together have max_readers. Each message names
  // the limit and its flag.
  absl::StatusOr<Ticket> Admit(const std::string& peer);

  int readers() const;  // bodies being read now

 private:
  void Release(const std::string& peer);

  const AdmissionLimits limits_;
  mutable absl::Mutex mu_;
  int readers_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> per_peer_ ABSL_GUARDED_BY(mu_);  // peers with at least one
};

}  // namespace colltest::http
