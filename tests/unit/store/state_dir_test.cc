#include "store/state_dir.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/store/store_test_util.h"

namespace colltest::store {
namespace {

using ::testing::HasSubstr;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::WriteBytes;

// Sets (or, with nullptr, unsets) an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(StateDirTest, FlagThenXdgStateHomeThenHome) {
  ScopedEnv xdg("XDG_STATE_HOME", "/xdg/state");
  ScopedEnv home("HOME", "/home/alice");
  EXPECT_EQ(*ResolveStateDir("/srv/colltest"), "/srv/colltest");
  EXPECT_EQ(*ResolveStateDir(""), "/xdg/state/colltest");
  {
    ScopedEnv relative("XDG_STATE_HOME", "relative/state");  // ignored, as XDG says
    EXPECT_EQ(*ResolveStateDir(""), "/home/alice/.local/state/colltest");
  }
  ScopedEnv no_xdg("XDG_STATE_HOME", nullptr);
  EXPECT_EQ(*ResolveStateDir(""), "/home/alice/.local/state/colltest");
  ScopedEnv no_home("HOME", nullptr);
  const absl::Status status = ResolveStateDir("").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--state-dir"));
  EXPECT_EQ(HistoryDatabasePath("/srv/colltest"), "/srv/colltest/history.sqlite3");
}

TEST(StateDirTest, CreatesTheDirectoryPrivateAndWritesThePid) {
  ScratchDir scratch;
  const std::string dir = scratch.File("a/b/state");
  absl::StatusOr<StateDirLock> lock = LockStateDir(dir);
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_TRUE(lock->held());
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(scratch.File("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0700, 0700u);
  EXPECT_EQ(ReadBytes(dir + "/colltestd.lock"), absl::StrCat(getpid(), "\n"));
}

TEST(StateDirTest, OneHolderAtATime) {
  ScratchDir scratch;
  const std::string dir = scratch.File("state");
  absl::StatusOr<StateDirLock> first = LockStateDir(dir);
  ASSERT_TRUE(first.ok()) << first.status();
  const absl::Status second = LockStateDir(dir).status();
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition) << second;
  EXPECT_EQ(second.message(),
            absl::StrCat("state directory ", dir, " is in use by another colltestd (pid ", getpid(),
                         "); give each colltestd its own --state-dir"));
  // A move keeps the lock held; destroying the holder releases it.
  StateDirLock moved = *std::move(first);
  EXPECT_TRUE(moved.held());
  EXPECT_FALSE(LockStateDir(dir).ok());
  moved = StateDirLock();
  absl::StatusOr<StateDirLock> again = LockStateDir(dir);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ReadBytes(dir + "/colltestd.lock"), absl::StrCat(getpid(), "\n"));
}

TEST(StateDirTest, RefusesAStateDirectoryThatIsAFile) {
  ScratchDir scratch;
  WriteBytes(scratch.File("file"), "x");
  const absl::Status status = LockStateDir(scratch.File("file")).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(scratch.File("file")));
  const absl::Status below = LockStateDir(scratch.File("file/state")).status();
  EXPECT_FALSE(below.ok());
  EXPECT_THAT(below.message(), HasSubstr("cannot create state directory"));
}

}  // namespace
}  // namespace colltest::store
