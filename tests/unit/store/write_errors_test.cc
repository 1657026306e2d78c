// What the store answers when the disk refuses a write: an error with SQLite's words and the file,
// and a database that works again once there is room.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/database.h"
#include "store/run_store.h"
#include "tests/unit/store/file_size_limit.h"
#include "tests/unit/store/store_test_util.h"

namespace colltest::store {
namespace {

namespace v1 = ::colltest::v1;
using testing::FileSizeLimit;
using ::testing::HasSubstr;
using testing::NewCase;
using testing::NewRun;
using testing::ScratchDir;

TEST(WriteErrorsTest, ARefusedWriteNamesTheFileAndSqlitesReason) {
  ScratchDir dir;
  const std::string path = dir.File("history.sqlite3");
  auto store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->InsertRun(NewRun("r-1", "full", {v1::VARIANT_LAMPORT})).ok());
  ASSERT_TRUE((*store)->AddCase("r-1", NewCase(0, v1::CASE_STATUS_OK)).ok());

  absl::Status refused;
  {
    FileSizeLimit full({path, path + "-wal"});
    refused = (*store)->AddCase("r-1", NewCase(1, v1::CASE_STATUS_OK));
  }
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(SqliteMessageOf(refused), "disk I/O error") << refused;
  EXPECT_THAT(refused.message(), HasSubstr(path));
  EXPECT_THAT(refused.message(), HasSubstr("record case 1 of run r-1"));

  // Nothing half-written, and the next write works once there is room.
  ASSERT_TRUE((*store)->AddCase("r-1", NewCase(1, v1::CASE_STATUS_OK)).ok());
  auto run = (*store)->GetRun("r-1");
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->cases_size(), 2);
}

TEST(WriteErrorsTest, SqliteMessageOfAnOtherStatusIsItsMessage) {
  EXPECT_EQ(SqliteMessageOf(absl::NotFoundError("run r-9 is not in the history")),
            "run r-9 is not in the history");
}

}  // namespace
}  // namespace colltest::store
