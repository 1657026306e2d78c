// A deadline on reading a request body. CivetWeb 1.15's mg_read returns only once it has every
// byte asked for, or the connection has been silent for request_timeout_ms (5 s): a client sending
// one byte every 0.5 s keeps a single mg_read waiting for hours, so a clock checked between reads
// bounds nothing. A watchdog thread instead shuts the reading side of the connection's socket when
// its deadline passes; the blocked mg_read then sees the end of the stream at once, and the handler
// answers 408 (the reply can still be written: only reading is shut).
#pragma once

#include <cstdint>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

struct mg_connection;

namespace colltest::http {

class ReadDeadlines {
 public:
  ReadDeadlines();   // starts the watchdog
  ~ReadDeadlines();  // stops it; every Watch must be gone
  ReadDeadlines(const ReadDeadlines&) = delete;
  ReadDeadlines& operator=(const ReadDeadlines&) = delete;

  // Shuts the reading side of socket `fd` at `deadline` unless destroyed before; declare it for as
  // long as the body is read, while the connection (and so `fd`) is certainly open.
  class Watch {
   public:
    Watch(ReadDeadlines* deadlines, int fd, absl::Time deadline);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

    bool expired() const;  // the deadline passed and reading was shut

   private:
    ReadDeadlines* deadlines_;
    uint64_t id_;
  };

 private:
  struct Entry {
    int fd;
    absl::Time deadline;
    bool expired = false;
  };
  void Run();
  // Shuts every entry past its deadline; the earliest deadline still ahead (InfiniteFuture: none).
  absl::Time ExpireDue(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: started once the members above exist
};

// The descriptor of the socket `conn` is served on. CivetWeb 1.15 does not expose it, so it is
// found among the process's descriptors as the TCP socket whose local port is the request's
// server port and whose peer is the request's remote address and port (a pair only one open
// connection can have). NOT_FOUND when there is none. Costs one getpeername per open descriptor,
// paid only by requests that carry a body.
absl::StatusOr<int> ConnectionSocket(const mg_connection* conn);

}  // namespace colltest::http
