#include "server/workers/fork_thread.h"

// When the controller is SIGKILLed this thread may exit before its siblings: the kernel then sends
// the workers their death signal and makes another thread of the dying controller their parent, so
// getppid() in a worker still names the controller. Workers therefore clean up on the signal
// itself (worker/app/main.cc), never on getppid().

namespace colltest::server {

ForkThread::ForkThread() : thread_([this] { Loop(); }) {}

ForkThread::~ForkThread() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void ForkThread::Run(const std::function<void()>& fn) {
  Task task{&fn};
  absl::MutexLock lock(&mu_);
  tasks_.push_back(&task);
  mu_.Await(absl::Condition(&task.done));
}

bool ForkThread::HasWorkOrStopping() const { return stopping_ || !tasks_.empty(); }

void ForkThread::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(this, &ForkThread::HasWorkOrStopping));
    if (tasks_.empty()) return;
    Task* task = tasks_.front();
    tasks_.pop_front();
    mu_.Unlock();
    (*task->fn)();
    mu_.Lock();
    task->done = true;
  }
}

}  // namespace colltest::server
