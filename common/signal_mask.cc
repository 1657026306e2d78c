#include "common/signal_mask.h"

#include <pthread.h>

namespace colltest::common {

sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return stop_signals;
}

void UnblockAllSignals() {
  sigset_t none;
  sigemptyset(&none);
  // sigprocmask, not pthread_sigmask: POSIX lists only the former as async-signal-safe.
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace colltest::common
