// The one thread every worker process is forked from.
#pragma once

#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace colltest::server {

// PR_SET_PDEATHSIG fires when the *thread* that forked a child exits, not when the process does.
// RunCase is called from request or queue threads that may be retired at any time (gRPC shrinks its
// thread pool), and forking there would get healthy workers SIGKILLed at random. Forking from this
// thread, which lives as long as the pool, ties the workers' lifetime to the controller's.
class ForkThread {
 public:
  ForkThread();
  ~ForkThread();

  ForkThread(const ForkThread&) = delete;
  ForkThread& operator=(const ForkThread&) = delete;

  // Runs `fn` on the fork thread and returns once it has returned.
  void Run(const std::function<void()>& fn);

 private:
  struct Task {
    const std::function<void()>* fn;
    bool done = false;
  };

  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::deque<Task*> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace colltest::server
