// Notices a streaming client that went away while its call had nothing to send. CivetWeb 1.15
// gives no socket to watch, so the only sign is a write that fails: while a sweep waits for its
// next event (a case may run for minutes), an empty line is written whenever the stream has been
// quiet for the interval, and the first one that fails cancels the call, and with it the run.
// Without it a killed client's sweep ran on until its next event (still RUNNING 4 minutes later).
#pragma once

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "http/reply.h"

namespace colltest::http {

// 250 ms: the first write after the client closed still succeeds (its kernel answers it with a
// reset), the next one fails, so a client gone is noticed within about half a second; 4 bytes
// (a one-byte chunk) per quarter second cost nothing.
inline constexpr absl::Duration kHeartbeatInterval = absl::Milliseconds(250);

class StreamHeartbeat {
 public:
  // Starts beating on `stream`; `context` is cancelled when a beat fails. Both must outlive this.
  StreamHeartbeat(NdjsonStream& stream, grpc::ClientContext& context,
                  absl::Duration interval = kHeartbeatInterval);
  ~StreamHeartbeat();  // stops beating (joins its thread)
  StreamHeartbeat(const StreamHeartbeat&) = delete;
  StreamHeartbeat& operator=(const StreamHeartbeat&) = delete;

  // Whether a beat failed (and the call was cancelled for it).
  bool client_gone() const { return client_gone_.load(); }

 private:
  void Beat();

  NdjsonStream& stream_;
  grpc::ClientContext& context_;
  const absl::Duration interval_;
  absl::Notification stop_;
  std::atomic<bool> client_gone_{false};
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace colltest::http
