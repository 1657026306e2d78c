#include "http/stream_heartbeat.h"

namespace colltest::http {

StreamHeartbeat::StreamHeartbeat(NdjsonStream& stream, grpc::ClientContext& context,
                                 absl::Duration interval)
    : stream_(stream), context_(context), interval_(interval), thread_([this] { Beat(); }) {}

StreamHeartbeat::~StreamHeartbeat() {
  stop_.Notify();
  thread_.join();
}

void StreamHeartbeat::Beat() {
  while (!stop_.WaitForNotificationWithTimeout(interval_)) {
    if (!stream_.Heartbeat(interval_)) {
      client_gone_.store(true);
      context_.TryCancel();
      return;
    }
  }
}

}  // namespace colltest::http
