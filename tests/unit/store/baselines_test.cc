// Baselines' owners: a runner replaces only its own, an admin any (and the owner stays), one
// owner's names are bounded while replacing stays possible at the bound, and the baselines of a
// version-3 database (before owners) belong to nobody after the migration.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/database.h"
#include "store/run_store.h"
#include "store/state_dir.h"
#include "tests/unit/store/store_test_util.h"

namespace colltest::store {
namespace {

using ::testing::HasSubstr;
using testing::NewRun;
using testing::ScratchDir;
namespace v1 = ::colltest::v1;

const BaselineSetter kAlice{"alice"};
const BaselineSetter kBob{"bob"};
const BaselineSetter kAdmin{"oncall", /*may_replace_any=*/true};

class BaselineOwnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Open();
    for (const char* id : {"r-1", "r-2"}) {
      ASSERT_TRUE(store_->InsertRun(NewRun(id, "", {}, v1::RUN_STATE_DONE)).ok());
    }
  }

  void Open() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<RunStore>> opened = RunStore::Open(path_);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
  }

  // Baseline `name` of machine key-a (host node-a) -> `run_id`, as `setter`.
  absl::Status Set(const std::string& name, const std::string& run_id,
                   const BaselineSetter& setter) {
    v1::Baseline baseline;
    baseline.set_machine_key("key-a");
    baseline.set_hostname("node-a");
    baseline.set_name(name);
    baseline.set_run_id(run_id);
    return store_->SetBaseline(baseline, setter).status();
  }

  std::string RunOf(const std::string& name) {
    absl::StatusOr<v1::Baseline> baseline = store_->GetBaseline("key-a", name);
    EXPECT_TRUE(baseline.ok()) << baseline.status();
    return baseline.ok() ? baseline->run_id() : "";
  }

  ScratchDir dir_;
  const std::string path_ = HistoryDatabasePath(dir_.path());
  std::unique_ptr<RunStore> store_;
};

TEST_F(BaselineOwnerTest, ARunnerCannotReplaceAnothersBaseline) {
  ASSERT_TRUE(Set("", "r-1", kAlice).ok());
  const absl::Status denied = Set("", "r-2", kBob);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied) << denied;
  EXPECT_EQ(denied.message(),
            "baseline \"default\" of host node-a belongs to alice; bob may replace only its own "
            "baselines (an admin may replace any)");
  EXPECT_EQ(RunOf("default"), "r-1");
  EXPECT_EQ(*store_->BaselineOwner("key-a", ""), "alice");

  ASSERT_TRUE(Set("", "r-2", kAlice).ok()) << "the owner replaces its own";
  EXPECT_EQ(RunOf("default"), "r-2");
}

TEST_F(BaselineOwnerTest, AnAdminReplacesAnyAndTheOwnerStays) {
  ASSERT_TRUE(Set("", "r-1", kAlice).ok());
  ASSERT_TRUE(Set("", "r-2", kAdmin).ok());
  EXPECT_EQ(RunOf("default"), "r-2");
  EXPECT_EQ(store_->GetBaseline("key-a", "")->set_by(), "oncall");
  EXPECT_EQ(*store_->BaselineOwner("key-a", ""), "alice");
  EXPECT_TRUE(Set("", "r-1", kAlice).ok()) << "still alice's after the admin's replacement";
  EXPECT_EQ(Set("", "r-1", kBob).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->BaselineOwner("key-a", "nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(BaselineOwnerTest, NewNamesAreBoundedPerOwnerButReplacingStaysPossible) {
  const BaselineSetter alice{"alice", false, /*max_per_owner=*/3};
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(Set(name, "r-1", alice).ok()) << name;
  const absl::Status full = Set("d", "r-1", alice);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_EQ(full.message(),
            "alice owns 3 baselines, the limit is 3 (colltestd --max-baselines-per-owner): "
            "baselines cannot be deleted, so replace one of its own (SetBaseline with that name) "
            "instead of adding \"d\"");
  EXPECT_TRUE(Set("b", "r-2", alice).ok()) << "replacing at the bound";
  EXPECT_EQ(RunOf("b"), "r-2");
  // Another owner's count is its own; an admin's replacement of alice's adds to nobody's.
  const BaselineSetter bob{"bob", false, 3};
  EXPECT_TRUE(Set("e", "r-1", bob).ok());
  const BaselineSetter admin{"oncall", true, 1};
  EXPECT_TRUE(Set("f", "r-1", admin).ok());
  EXPECT_TRUE(Set("a", "r-2", admin).ok()) << "a replacement, so the admin's bound of 1 is moot";
  EXPECT_EQ(Set("g", "r-1", admin).code(), absl::StatusCode::kResourceExhausted);
  // 0: no bound.
  const BaselineSetter unbounded{"carol", false, 0};
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(Set(absl::StrCat("n", i), "r-1", unbounded).ok());
}

TEST_F(BaselineOwnerTest, RefusesASetterWithoutAName) {
  EXPECT_EQ(Set("", "r-1", BaselineSetter{}).code(), absl::StatusCode::kInvalidArgument);
}

// A version-3 database (as a colltestd before baseline owners left it: the baselines table
// without `owner`) migrates to version 4 with its baselines owned by nobody: only an admin may
// replace them, and they count against no owner's bound.
TEST_F(BaselineOwnerTest, BaselinesFromBeforeOwnersBelongToNobody) {
  ASSERT_TRUE(Set("", "r-1", kAlice).ok());
  ASSERT_TRUE(Set("fast", "r-1", kAlice).ok());
  store_.reset();
  {
    absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path_);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)
                    ->Exec("DROP INDEX baselines_by_owner; "
                           "ALTER TABLE baselines DROP COLUMN owner; PRAGMA user_version = 3",
                           "make a version-3 database")
                    .ok());
  }
  Open();
  EXPECT_EQ(store_->schema_version(), 5);
  EXPECT_EQ(*store_->BaselineOwner("key-a", ""), "");
  EXPECT_EQ(RunOf("default"), "r-1");

  const absl::Status denied = Set("", "r-2", kAlice);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied) << denied;
  EXPECT_THAT(denied.message(), HasSubstr("baseline \"default\" of host node-a has no owner"));
  EXPECT_THAT(denied.message(), HasSubstr("only an admin may replace it"));

  ASSERT_TRUE(Set("", "r-2", kAdmin).ok());
  EXPECT_EQ(RunOf("default"), "r-2");
  EXPECT_EQ(*store_->BaselineOwner("key-a", ""), "") << "an admin's replacement keeps the owner";
  const BaselineSetter alice{"alice", false, /*max_per_owner=*/1};
  EXPECT_TRUE(Set("new", "r-1", alice).ok()) << "the two old baselines count against nobody";
}

}  // namespace
}  // namespace colltest::store
