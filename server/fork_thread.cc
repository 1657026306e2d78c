#include "server/fork_thread.h"

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
