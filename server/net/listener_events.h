// What colltestd's listener reports as it accepts and refuses connections, for whoever counts them
// (metrics.h). An interface of its own so that the listener depends on no metrics library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace colltest::server {

class ListenerEvents {
 public:
  // Why a connection was closed without being handed to gRPC, or not accepted at all.
  enum class Refusal {
    kCap,               // accepted and closed at once: --max-connections was reached
    kHandshakeTimeout,  // no HTTP/2 preface within --handshake-timeout
    kBadPreface,        // sent something else (TLS, HTTP/1) or hung up first
    kAcceptError,       // accept failed for want of descriptors or memory
    kPeerLimit,         // accepted and closed at once: --max-connections-per-peer was reached
    kFirstCallTimeout,  // shut down: no authenticated call within --first-call-timeout
    kEvicted,           // shut down to make room at the cap: the oldest without a call yet
  };

  virtual ~ListenerEvents() = default;
  // Open client connections: handed to gRPC plus those awaiting their preface.
  virtual void SetConnectionsOpen(size_t open) = 0;
  // `count` more refusals for `reason`.
  virtual void ObserveRefused(Refusal reason, uint64_t count) = 0;
};

}  // namespace colltest::server
