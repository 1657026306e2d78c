// The gRPC calls the gateway has in flight, so that stopping the gateway can cancel them: CivetWeb
// joins its worker threads on stop, and a thread waiting on a sweep (or a Health check) would
// otherwise hold the stop until the run ended.
#pragma once

#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/client_context.h"

namespace colltest::http {

class CallRegistry {
 public:
  // Registers `context` for its lifetime; declare it after the context, so that it goes first.
  // Once the registry is closed, the call is cancelled at once (it then fails CANCELLED).
  class Scope {
   public:
    Scope(CallRegistry* registry, grpc::ClientContext* context);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CallRegistry* registry_;
    grpc::ClientContext* context_;
  };

  // Cancels every registered call and every call registered from now on.
  void CancelAll();

 private:
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace colltest::http
