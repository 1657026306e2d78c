#include "common/signal_mask.h"

#include <pthread.h>

#include <thread>

#include "gtest/gtest.h"

namespace colltest::common {
namespace {

sigset_t CurrentMask() {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return mask;
}

bool SigpipeIgnored() {
  struct sigaction action {};
  sigaction(SIGPIPE, nullptr, &action);
  return action.sa_handler == SIG_IGN;
}

// In a thread of its own, since a mask is per thread: the test binary's others keep theirs.
TEST(SignalMaskTest, BlockStopSignalsBlocksIntAndTermAndIgnoresPipe) {
  std::thread([] {
    const sigset_t returned = BlockStopSignals();
    const sigset_t mask = CurrentMask();
    for (int blocked : {SIGINT, SIGTERM}) {
      EXPECT_EQ(sigismember(&mask, blocked), 1) << blocked;
      EXPECT_EQ(sigismember(&returned, blocked), 1) << blocked;
    }
    EXPECT_EQ(sigismember(&mask, SIGPIPE), 0);
    EXPECT_EQ(sigismember(&returned, SIGPIPE), 0);
    EXPECT_TRUE(SigpipeIgnored());
    signal(SIGPIPE, SIG_DFL);
  }).join();
}

TEST(SignalMaskTest, UnblockAllSignalsClearsTheMask) {
  std::thread([] {
    sigset_t some;
    sigemptyset(&some);
    sigaddset(&some, SIGTERM);
    sigaddset(&some, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &some, nullptr);
    UnblockAllSignals();
    const sigset_t mask = CurrentMask();
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      EXPECT_EQ(sigismember(&mask, signal_number), 0) << signal_number;
    }
  }).join();
}

}  // namespace
}  // namespace colltest::common
