#include "server/devices/own_processes.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::Contains;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

TEST(OwnProcesses, ItselfAndAChildNotYetReaped) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  const std::vector<int> own = OwnProcesses(getpid());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_THAT(own, Contains(getpid()));
  EXPECT_THAT(own, Contains(child));
  EXPECT_THAT(OwnProcesses(getpid()), Not(Contains(child)));  // reaped: gone
}

// A process name may hold spaces and parentheses; the parent pid is read after the last ')'.
TEST(OwnProcesses, ReadsTheParentAfterTheLastParenthesis) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("own_processes_" + std::to_string(getpid()));
  auto stat = [&](int pid, const std::string& line) {
    std::filesystem::create_directories(root / std::to_string(pid));
    std::ofstream(root / std::to_string(pid) / "stat") << line << "\n";
  };
  stat(100, "100 (colltestd) S 1 100 100");
  stat(101, "101 (colltest-worker) S 100 100 100");
  stat(102, "102 (a) 1 (b) S 100 100 100");
  stat(103, "103 (python3) S 1 103 103");
  stat(104, "104 (grandchild) S 101 100 100");
  std::filesystem::create_directories(root / "self");
  EXPECT_THAT(OwnProcesses(100, root.string()), UnorderedElementsAre(100, 101, 102));
  std::filesystem::remove_all(root);
}

TEST(OwnProcesses, WithoutProcOnlyItself) {
  EXPECT_THAT(OwnProcesses(42, "/nonexistent-proc"), UnorderedElementsAre(42));
}

}  // namespace
}  // namespace colltest::server
