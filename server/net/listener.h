// colltestd's own accept loop for plaintext gRPC (TCP and unix sockets). gRPC 1.51's listener
// stops accepting for good after one failed accept4 (EMFILE under a connection flood) and lets any
// number of idle connections hold descriptors, so colltestd accepts connections itself and hands
// each one to gRPC (grpc::AddInsecureChannelFromFd) once it has proved to speak HTTP/2:
//  - at most `max_connections` connections are open (waiting for their preface or handed over);
//    beyond that a new connection is accepted and closed at once, so the backlog never fills;
//  - a connection is handed over only after its 24-byte HTTP/2 client preface has arrived (peeked,
//    left for gRPC to read) within `handshake_timeout`; else it is closed, so idle TCP connections
//    cannot hold the cap;
//  - EMFILE, ENFILE, ENOBUFS and ENOMEM from accept pause accepting briefly (10 ms, doubling to
//    500 ms) and never stop it.
// A client that sends the preface and then answers SETTINGS and PINGs would hold its slot for the
// idle limit (5 min) without ever showing a token, so a connection must also prove itself: it is
// "proven" once a call on it has passed authentication (PeerNames::MarkProven; with authentication
// off every call does). Unproven connections, awaiting their preface or handed over:
//  - are shut down `first_call_timeout` after being accepted;
//  - count at most `max_unproven_per_peer` per client IP address (not for unix sockets): beyond it
//    the peer's own oldest one past `eviction_grace` makes room, else the newcomer is refused;
//  - make room at the cap, shared fairly among client addresses: a newcomer from an address with
//    k unproven connections evicts the oldest one past `eviction_grace` of the address holding
//    the most, if that is more than k; else it is refused. An attacker's addresses thus cannot
//    evict each other's connections once balanced, so theirs age past the grace, and a client
//    that holds none always finds a victim. Proven connections are never evicted, and a client
//    that calls at once is never evicted before its call (the grace, and it holds the fewest).
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/net/handed_connections.h"
#include "server/net/listen_socket.h"
#include "server/net/listener_events.h"
#include "server/net/peer_names.h"
#include "common/unique_fd.h"

namespace colltest::server {

struct ListenerOptions {
  uint32_t max_connections = 1024;
  absl::Duration handshake_timeout = absl::Seconds(5);
  int backlog = 1024;
  // The protections against unproven connections; their defaults here leave them off, the
  // server's flags turn them on (server/options.h).
  absl::Duration first_call_timeout = absl::InfiniteDuration();
  uint32_t max_unproven_per_peer = 0;                        // 0: no limit
  absl::Duration eviction_grace = absl::InfiniteDuration();  // infinite: nobody is evicted
  // Where the peer of each handed connection is recorded; not owned.
  PeerNames* peer_names = &HandedPeerNames();
  // Told of open connections and refusals (metrics); not owned; null: nobody.
  ListenerEvents* events = nullptr;
};

struct ListenerCounts {
  size_t handed_over = 0;       // open connections gRPC serves
  size_t awaiting_preface = 0;  // accepted, preface not yet complete
  uint64_t refused = 0;         // closed at once: the cap was reached
  uint64_t timed_out = 0;       // closed: no preface within the handshake timeout
  uint64_t not_http2 = 0;       // closed: sent something else (TLS, HTTP/1) or hung up first
  uint64_t accept_errors = 0;   // accept failed for want of descriptors or memory
  uint64_t peer_limited = 0;    // closed at once: the peer's unproven connections were at the limit
  uint64_t first_call_timed_out = 0;  // shut down: no authenticated call in time
  uint64_t evicted = 0;               // shut down or closed to make room for a newcomer
};

class Listener {
 public:
  // Takes ownership of a connected, non-blocking socket that has sent the HTTP/2 preface.
  using Handoff = std::function<void(int fd)>;

  // Binds now, so that the address (with the chosen port) is known before the server starts.
  static absl::StatusOr<std::unique_ptr<Listener>> Bind(const std::string& listen,
                                                        ListenerOptions options);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  const std::string& address() const { return sockets_.address; }
  // Starts the accept thread; connections that arrived since Bind wait in the backlog until then.
  void Start(Handoff handoff);
  // Stops accepting and closes the connections still waiting for their preface. Call before the
  // gRPC server shuts down, which closes the ones handed over.
  void Stop();
  ListenerCounts counts() const;

 private:
  struct Pending {
    UniqueFd fd;
    std::string peer;  // as accepted: "ipv4:127.0.0.1:41234"
    std::string host;  // PeerHost(peer): "127.0.0.1"; "" for a unix socket
    absl::Time accepted_at;
    absl::Time deadline;    // the handshake timeout
    absl::Time recheck_at;  // after a partial preface: when to look again
  };

  Listener(ListenSockets sockets, ListenerOptions options, UniqueFd wake);
  void Loop();
  std::vector<pollfd> PollSet(absl::Time now) const;
  int PollTimeoutMs(absl::Time now) const;
  void ServePending(const std::vector<pollfd>& polled, absl::Time now);
  // What the peeked bytes say: hand over, wait for more, or close.
  enum class Preface { kComplete, kPartial, kWrong };
  static Preface PeekPreface(int fd);
  void HandOver(Pending& pending);
  void AcceptFrom(int listen_fd, absl::Time now);
  void AcceptFailed(int error, absl::Time now);
  bool AtCap();
  // Whether a connection from `host` may be accepted now, evicting an unproven one if that makes
  // room; the reason to refuse it otherwise.
  std::optional<ListenerEvents::Refusal> Admit(const std::string& host, absl::Time now);
  // Evicts the oldest unproven connection from `host` accepted before now minus the grace,
  // awaiting its preface or handed over; false when there is none.
  bool EvictOldestUnproven(const std::string& host, absl::Time now);
  // At the cap: evicts for a newcomer from `host` (see the top of this file); false if none.
  bool EvictForNewcomer(const std::string& host, absl::Time now);
  std::unordered_map<std::string, size_t> UnprovenByHost() const;
  size_t PendingFrom(const std::string& host) const;
  // Once a second: forgets closed connections and shuts down those past the first-call timeout.
  void Tidy(absl::Time now);
  void Count(ListenerEvents::Refusal reason, uint64_t count);
  void Report(ListenerEvents::Refusal reason, uint64_t count);
  void ReportOpen();

  const ListenSockets sockets_;
  const ListenerOptions options_;
  UniqueFd wake_;  // an eventfd: Stop() makes it readable
  Handoff handoff_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Owned by the accept thread.
  std::vector<Pending> pending_;
  HandedConnections handed_;
  absl::Time accept_paused_until_ = absl::InfinitePast();
  absl::Duration accept_backoff_ = absl::ZeroDuration();
  absl::Time next_prune_ = absl::InfinitePast();
  absl::Time last_refusal_log_ = absl::InfinitePast();
  absl::Time last_error_log_ = absl::InfinitePast();

  mutable absl::Mutex mu_;
  ListenerCounts counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace colltest::server
