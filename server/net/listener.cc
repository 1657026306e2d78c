#include "server/net/listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace colltest::server {
namespace {

// RFC 9113 section 3.4: every HTTP/2 client connection starts with these 24 bytes.
constexpr char kClientPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceBytes = sizeof(kClientPreface) - 1;

// After a partial preface the socket stays readable, so it is looked at again after this pause
// instead of spinning on poll; a real client sends the 24 bytes in one segment.
constexpr absl::Duration kPartialRecheck = absl::Milliseconds(10);
constexpr absl::Duration kMinAcceptBackoff = absl::Milliseconds(10);
constexpr absl::Duration kMaxAcceptBackoff = absl::Milliseconds(500);
constexpr absl::Duration kPruneInterval = absl::Seconds(1);
// Refusals and accept errors come in floods: one log line per interval, with the count.
constexpr absl::Duration kLogInterval = absl::Seconds(5);
// Accepts per listening socket per loop turn, so that prefaces are checked during a flood.
constexpr int kAcceptBatch = 64;
// A connection shut down to make room leaves when gRPC reads its EOF, within milliseconds; until
// then up to this many are not counted against the cap, so that one eviction admits one newcomer
// at once. The cap may thus be exceeded by this many for those milliseconds, which the descriptor
// headroom of the default cap (fd_limit.h) absorbs.
constexpr size_t kMaxEvictionsInFlight = 32;
// Hosts looked at for a victim per newcomer at the cap, the heaviest first, bounding the work of
// an accept during a flood from many addresses.
constexpr size_t kMaxHostsTried = 8;

using Refusal = ListenerEvents::Refusal;

bool OutOfResources(int error) {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Listener>> Listener::Bind(const std::string& listen,
                                                         ListenerOptions options) {
  COLLTEST_ASSIGN_OR_RETURN(ListenSockets sockets, BindListenSockets(listen, options.backlog));
  UniqueFd wake(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.valid()) return absl::ErrnoToStatus(errno, "eventfd (listener)");
  return std::unique_ptr<Listener>(new Listener(std::move(sockets), options, std::move(wake)));
}

Listener::Listener(ListenSockets sockets, ListenerOptions options, UniqueFd wake)
    : sockets_(std::move(sockets)), options_(options), wake_(std::move(wake)) {}

Listener::~Listener() {
  Stop();
  if (!sockets_.unix_path.empty()) unlink(sockets_.unix_path.c_str());
}

void Listener::Start(Handoff handoff) {
  handoff_ = std::move(handoff);
  thread_ = std::thread([this] { Loop(); });
}

void Listener::Stop() {
  stopping_.store(true);
  const uint64_t one = 1;
  if (write(wake_.get(), &one, sizeof(one)) < 0) {
    // The counter cannot overflow with one write per Stop; nothing to do.
  }
  if (thread_.joinable()) thread_.join();
  pending_.clear();
}

ListenerCounts Listener::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

void Listener::Loop() {
  while (!stopping_.load()) {
    std::vector<pollfd> polled = PollSet(absl::Now());
    const int ready = poll(polled.data(), polled.size(), PollTimeoutMs(absl::Now()));
    if (ready < 0 && errno != EINTR) {
      spdlog::error("listener: poll: {}", std::strerror(errno));
      absl::SleepFor(kMinAcceptBackoff);
      continue;
    }
    if (stopping_.load()) break;
    const absl::Time now = absl::Now();
    ServePending(polled, now);
    for (size_t i = 0; i < sockets_.fds.size(); ++i) {
      if (polled[1 + i].revents & POLLIN) AcceptFrom(sockets_.fds[i].get(), now);
    }
    if (now >= next_prune_) Tidy(now);
  }
}

void Listener::Tidy(absl::Time now) {
  next_prune_ = now + kPruneInterval;
  const size_t open = handed_.Prune();
  handed_.RefreshProven(*options_.peer_names);
  if (options_.first_call_timeout != absl::InfiniteDuration()) {
    Count(Refusal::kFirstCallTimeout,
          handed_.ShutDownUnprovenSince(now - options_.first_call_timeout));
  }
  ReportOpen();
  absl::MutexLock lock(&mu_);
  counts_.handed_over = open;
}

// [wake, listening sockets..., pending connections...]: ServePending relies on this order. A
// listening socket is polled for nothing while accepting is paused, a pending connection for
// nothing until its recheck time.
std::vector<pollfd> Listener::PollSet(absl::Time now) const {
  std::vector<pollfd> polled;
  polled.reserve(1 + sockets_.fds.size() + pending_.size());
  polled.push_back(pollfd{wake_.get(), POLLIN, 0});
  const short accept_events = now >= accept_paused_until_ ? POLLIN : 0;
  for (const UniqueFd& fd : sockets_.fds) polled.push_back(pollfd{fd.get(), accept_events, 0});
  for (const Pending& p : pending_) {
    polled.push_back(pollfd{p.fd.get(), static_cast<short>(now >= p.recheck_at ? POLLIN : 0), 0});
  }
  return polled;
}

int Listener::PollTimeoutMs(absl::Time now) const {
  absl::Time wake_at = next_prune_;
  if (accept_paused_until_ > now) wake_at = std::min(wake_at, accept_paused_until_);
  for (const Pending& p : pending_) {
    wake_at = std::min(wake_at, p.deadline);
    if (p.recheck_at > now) wake_at = std::min(wake_at, p.recheck_at);
  }
  const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(wake_at - now, absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
}

void Listener::ServePending(const std::vector<pollfd>& polled, absl::Time now) {
  const size_t first = 1 + sockets_.fds.size();
  std::vector<Pending> waiting;
  waiting.reserve(pending_.size());
  uint64_t timed_out = 0, not_http2 = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    if (const short revents = polled[first + i].revents; revents != 0) {
      Preface preface = PeekPreface(p.fd.get());
      // A peer that hung up after part of the preface would otherwise be polled until its deadline.
      if (preface == Preface::kPartial && (revents & (POLLHUP | POLLERR)))
        preface = Preface::kWrong;
      if (preface == Preface::kComplete) {
        HandOver(p);
        continue;
      }
      if (preface == Preface::kWrong) {
        ++not_http2;
        continue;  // closed as `p` goes
      }
      p.recheck_at = now + kPartialRecheck;
    }
    if (now >= p.deadline) {
      ++timed_out;
      continue;
    }
    waiting.push_back(std::move(p));
  }
  pending_ = std::move(waiting);
  Report(ListenerEvents::Refusal::kHandshakeTimeout, timed_out);
  Report(ListenerEvents::Refusal::kBadPreface, not_http2);
  ReportOpen();
  absl::MutexLock lock(&mu_);
  counts_.timed_out += timed_out;
  counts_.not_http2 += not_http2;
  counts_.awaiting_preface = pending_.size();
  counts_.handed_over = handed_.size();
}

Listener::Preface Listener::PeekPreface(int fd) {
  char head[kPrefaceBytes];
  const ssize_t got = recv(fd, head, sizeof(head), MSG_PEEK);
  if (got < 0) return errno == EAGAIN || errno == EINTR ? Preface::kPartial : Preface::kWrong;
  if (got == 0) return Preface::kWrong;  // the peer hung up
  if (std::memcmp(head, kClientPreface, static_cast<size_t>(got)) != 0) return Preface::kWrong;
  return static_cast<size_t>(got) == kPrefaceBytes ? Preface::kComplete : Preface::kPartial;
}

void Listener::HandOver(Pending& pending) {
  UniqueFd fd = std::move(pending.fd);
  // gRPC's own listener sets TCP_NODELAY on what it accepts; a handed-over socket needs it too,
  // or small replies wait up to 40 ms for delayed ACKs (Nagle). Fails harmlessly on unix sockets.
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // Recorded before gRPC owns the fd: it may close it at any moment after.
  if (!handed_.Add(fd.get(), std::move(pending.host), pending.accepted_at)) return;
  // gRPC names this connection "fd:N"; the service asks for the real peer (peer_names.h) and marks
  // the connection proven there once a call on it passes authentication.
  options_.peer_names->Record(fd.get(), std::move(pending.peer));
  handoff_(fd.release());
}

bool Listener::AtCap() {
  const auto held = [this] {
    return handed_.size() + pending_.size() -
           std::min(handed_.shutting_down(), kMaxEvictionsInFlight);
  };
  if (held() < options_.max_connections) return false;
  handed_.Prune();
  return held() >= options_.max_connections;
}

size_t Listener::PendingFrom(const std::string& host) const {
  return std::count_if(pending_.begin(), pending_.end(),
                       [&host](const Pending& p) { return p.host == host; });
}

std::optional<Refusal> Listener::Admit(const std::string& host, absl::Time now) {
  const uint32_t per_peer = options_.max_unproven_per_peer;
  if (per_peer > 0 && !host.empty() && PendingFrom(host) + handed_.UnprovenFrom(host) >= per_peer &&
      !EvictOldestUnproven(host, now)) {
    return Refusal::kPeerLimit;
  }
  if (AtCap() && !EvictForNewcomer(host, now)) return Refusal::kCap;
  return std::nullopt;
}

std::unordered_map<std::string, size_t> Listener::UnprovenByHost() const {
  std::unordered_map<std::string, size_t> by_host;
  for (const Pending& p : pending_) ++by_host[p.host];
  handed_.CountUnproven(by_host);
  return by_host;
}

bool Listener::EvictForNewcomer(const std::string& host, absl::Time now) {
  if (options_.eviction_grace == absl::InfiniteDuration()) return false;
  std::unordered_map<std::string, size_t> by_host = UnprovenByHost();
  const size_t newcomer_has = by_host[host];
  std::vector<std::pair<size_t, std::string>> heavier;
  for (auto& [other, count] : by_host) {
    if (count > newcomer_has) heavier.emplace_back(count, other);
  }
  // The heaviest first; a host whose connections are all younger than the grace yields none.
  std::sort(heavier.rbegin(), heavier.rend());
  if (heavier.size() > kMaxHostsTried) heavier.resize(kMaxHostsTried);
  for (const auto& [count, other] : heavier) {
    if (EvictOldestUnproven(other, now)) return true;
  }
  return false;
}

bool Listener::EvictOldestUnproven(const std::string& host, absl::Time now) {
  if (options_.eviction_grace == absl::InfiniteDuration()) return false;
  const absl::Time cutoff = now - options_.eviction_grace;
  auto oldest = pending_.end();
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->host == host && it->accepted_at <= cutoff &&
        (oldest == pending_.end() || it->accepted_at < oldest->accepted_at)) {
      oldest = it;
    }
  }
  const bool may_shut_down = handed_.shutting_down() < kMaxEvictionsInFlight;
  // `host` matches exactly here: "" is every unix-socket client together.
  const absl::Time oldest_handed =
      may_shut_down ? handed_.OldestUnproven(host) : absl::InfiniteFuture();
  const bool pending_first = oldest != pending_.end() && oldest->accepted_at <= oldest_handed;
  if (pending_first ||
      !(may_shut_down && handed_.ShutDownOldestUnproven(host, cutoff, *options_.peer_names))) {
    if (oldest == pending_.end()) return false;
    pending_.erase(oldest);  // closed: it never reached gRPC
  }
  Count(Refusal::kEvicted, 1);
  return true;
}

void Listener::AcceptFrom(int listen_fd, absl::Time now) {
  uint64_t refused = 0, peer_limited = 0;
  for (int i = 0; i < kAcceptBatch && now >= accept_paused_until_; ++i) {
    UniqueFd fd(accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      AcceptFailed(errno, now);
      continue;
    }
    accept_backoff_ = absl::ZeroDuration();
    // Asked now, while the peer is surely still connected.
    std::string peer = DescribePeer(fd.get());
    std::string host = PeerHost(peer);
    if (const std::optional<Refusal> refusal = Admit(host, now); refusal.has_value()) {
      // Closed as `fd` goes: the client sees the connection reset or closed.
      ++(*refusal == Refusal::kCap ? refused : peer_limited);
      continue;
    }
    const absl::Time deadline =
        now + std::min(options_.handshake_timeout, options_.first_call_timeout);
    pending_.push_back(
        Pending{std::move(fd), std::move(peer), std::move(host), now, deadline, now});
  }
  Report(Refusal::kCap, refused);
  Count(Refusal::kPeerLimit, peer_limited);
  ReportOpen();
  absl::MutexLock lock(&mu_);
  counts_.refused += refused;
  counts_.awaiting_preface = pending_.size();
  if (refused + peer_limited > 0 && now - last_refusal_log_ >= kLogInterval) {
    last_refusal_log_ = now;
    spdlog::warn(
        "listener: {} open connections (--max-connections {}): refusing new ones ({} so far, "
        "{} more from peers at --max-connections-per-peer {}, {} unproven connections evicted)",
        handed_.size() + pending_.size(), options_.max_connections, counts_.refused,
        counts_.peer_limited, options_.max_unproven_per_peer, counts_.evicted);
  }
}

void Listener::AcceptFailed(int error, absl::Time now) {
  // Network errors of the connection being accepted (ECONNABORTED, EPROTO, ENETDOWN, ...) concern
  // that connection only: go on. Lack of descriptors or memory lasts: pause accepting (the client
  // waits in the backlog) and try again, never giving up.
  const bool pause = OutOfResources(error) || error == EBADF || error == EINVAL;
  if (pause) {
    accept_backoff_ = std::clamp(accept_backoff_ * 2, kMinAcceptBackoff, kMaxAcceptBackoff);
    accept_paused_until_ = now + accept_backoff_;
    Report(ListenerEvents::Refusal::kAcceptError, 1);
  }
  absl::MutexLock lock(&mu_);
  if (!pause) return;
  ++counts_.accept_errors;
  if (now - last_error_log_ >= kLogInterval) {
    last_error_log_ = now;
    spdlog::warn("listener: accept: {}: retrying in {} ({} such errors so far)",
                 std::strerror(error), absl::FormatDuration(accept_backoff_),
                 counts_.accept_errors);
  }
}

void Listener::Count(Refusal reason, uint64_t count) {
  if (count == 0) return;
  Report(reason, count);
  absl::MutexLock lock(&mu_);
  switch (reason) {
    case Refusal::kPeerLimit:
      counts_.peer_limited += count;
      break;
    case Refusal::kFirstCallTimeout:
      counts_.first_call_timed_out += count;
      break;
    case Refusal::kEvicted:
      counts_.evicted += count;
      break;
    default:
      break;  // counted where they happen
  }
}

void Listener::Report(ListenerEvents::Refusal reason, uint64_t count) {
  if (options_.events != nullptr && count > 0) options_.events->ObserveRefused(reason, count);
}

void Listener::ReportOpen() {
  if (options_.events != nullptr) {
    options_.events->SetConnectionsOpen(handed_.size() + pending_.size());
  }
}

}  // namespace colltest::server
