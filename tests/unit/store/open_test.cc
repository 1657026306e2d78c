// RunStore::Open on the files it may meet: an older schema (migrated), a newer one, a damaged
// file, one it cannot write (each refused and left as it was), and the WAL mode it sets.
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/database.h"
#include "store/run_store.h"
#include "store/state_dir.h"
#include "tests/unit/store/store_test_util.h"

namespace colltest::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Machine;
using testing::NewCase;
using testing::NewRun;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::WriteBytes;
namespace v1 = ::colltest::v1;

std::unique_ptr<Database> OpenRaw(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? *std::move(db) : nullptr;
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// Every table and index with its SQL, to compare two databases' schemas.
std::vector<std::string> SchemaOf(const std::string& path) {
  std::unique_ptr<Database> db = OpenRaw(path);
  absl::StatusOr<Statement> select = db->Prepare(
      "SELECT type || ' ' || name || ': ' || ifnull(sql, '') FROM sqlite_master "
      "ORDER BY name",
      "read the schema");
  EXPECT_TRUE(select.ok()) << select.status();
  std::vector<std::string> rows;
  while (select.ok() && select->Step().value_or(false)) rows.push_back(select->ColumnText(0));
  return rows;
}

// A version-1 database as an older colltestd left it: the frozen schema and, by hand, a machine,
// a finished run (variants LAMPORT and NCCL) with two cases and a running one (ONE_STAGE).
void WriteV1Database(const std::string& path) {
  std::unique_ptr<Database> db = OpenRaw(path);
  ASSERT_TRUE(db->Exec(ReadBytes(STORE_TEST_FIXTURE_DIR "/schema_v1.sql"), "fixture").ok());
  ASSERT_TRUE(db->Exec("PRAGMA journal_mode = WAL", "wal").ok());
  const v1::MachineIdentity machine = Machine("key-a", "node-a");
  absl::StatusOr<Statement> insert_machine =
      db->Prepare("INSERT INTO machines VALUES (?, ?, ?)", "machine");
  ASSERT_TRUE(insert_machine->BindText(1, "key-a")
                  .BindText(2, "node-a")
                  .BindBlob(3, machine.SerializeAsString())
                  .Run()
                  .ok());
  absl::StatusOr<Statement> insert_run = db->Prepare(
      "INSERT INTO runs (run_id, state, label, owner, backend, created_ms, finished_ms, message, "
      "request_json, spec, machine_key, cases, ok, failed) "
      "VALUES (?, ?, ?, 'alice', 'cpu', ?, 0, '', '{}', ?, 'key-a', ?, ?, ?)",
      "run");
  ASSERT_TRUE(insert_run.ok()) << insert_run.status();
  const v1::RunResult done = NewRun("r-1", "nightly", {v1::VARIANT_LAMPORT, v1::VARIANT_NCCL});
  const v1::RunResult running = NewRun("r-2", "pr", {v1::VARIANT_ONE_STAGE});
  ASSERT_TRUE(insert_run->BindText(1, "r-1")
                  .BindInt(2, v1::RUN_STATE_DONE)
                  .BindText(3, "nightly")
                  .BindInt(4, 1000)
                  .BindBlob(5, done.spec().SerializeAsString())
                  .BindInt(6, 2)
                  .BindInt(7, 1)
                  .BindInt(8, 1)
                  .Run()
                  .ok());
  insert_run->Reset();
  ASSERT_TRUE(insert_run->BindText(1, "r-2")
                  .BindInt(2, v1::RUN_STATE_RUNNING)
                  .BindText(3, "pr")
                  .BindInt(4, 2000)
                  .BindBlob(5, running.spec().SerializeAsString())
                  .BindInt(6, 0)
                  .BindInt(7, 0)
                  .BindInt(8, 0)
                  .Run()
                  .ok());
  absl::StatusOr<Statement> insert_case =
      db->Prepare("INSERT INTO cases VALUES (1, ?, 3, 1, 4, 128, 4096, 1, ?, 10.5, ?)", "case");
  for (const auto& [index, status] :
       {std::pair{0, v1::CASE_STATUS_OK}, std::pair{1, v1::CASE_STATUS_WRONG}}) {
    ASSERT_TRUE(insert_case->BindInt(1, index)
                    .BindInt(2, status)
                    .BindBlob(3, NewCase(index, status).SerializeAsString())
                    .Run()
                    .ok());
    insert_case->Reset();
  }
}

TEST(OpenTest, MigratesAVersion1DatabaseAndEverythingWorksOnIt) {
  ScratchDir dir;
  const std::string path = HistoryDatabasePath(dir.path());
  WriteV1Database(path);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  {
    absl::StatusOr<std::unique_ptr<RunStore>> opened = RunStore::Open(path);
    ASSERT_TRUE(opened.ok()) << opened.status();
    RunStore& store = **opened;
    EXPECT_EQ(store.schema_version(), 5);

    absl::StatusOr<v1::RunResult> run = store.GetRun("r-1");
    ASSERT_TRUE(run.ok()) << run.status();
    // Recorded before runs had a placement: one rank per GPU (0), not time-sliced.
    EXPECT_EQ(run->ranks_per_gpu(), 0u);
    EXPECT_FALSE(run->time_sliced());
    ASSERT_EQ(run->cases_size(), 2);
    EXPECT_EQ(run->cases(1).status(), v1::CASE_STATUS_WRONG);
    EXPECT_EQ(run->cases(1).ranks_size(), 4);
    EXPECT_EQ(run->machine().hostname(), "node-a");
    EXPECT_EQ(run->spec().label(), "nightly");

    // The migration filled run_variants from the stored requests.
    v1::ListRunsRequest nccl;
    nccl.set_variant(v1::VARIANT_NCCL);
    ASSERT_EQ(store.ListRuns(nccl)->runs_size(), 1);
    EXPECT_EQ(store.ListRuns(nccl)->runs(0).run_id(), "r-1");
    v1::ListRunsRequest one_stage;
    one_stage.set_variant(v1::VARIANT_ONE_STAGE);
    ASSERT_EQ(store.ListRuns(one_stage)->runs_size(), 1);
    EXPECT_EQ(store.ListRuns(one_stage)->runs(0).run_id(), "r-2");

    ASSERT_TRUE(store.AddCase("r-2", NewCase(0, v1::CASE_STATUS_OK)).ok());
    v1::Baseline baseline;
    baseline.set_machine_key("key-a");
    baseline.set_run_id("r-1");
    ASSERT_TRUE(store.SetBaseline(baseline, {"alice"}).ok());
    EXPECT_EQ(store.GetBaseline("key-a", "default")->run_id(), "r-1");
    EXPECT_EQ(*store.Prune(1, absl::ZeroDuration(), 0, 0), 0u);  // r-1 baseline, r-2 newest
    EXPECT_THAT(*store.MarkInterrupted("stopped", 3000), ElementsAre("r-2"));
    EXPECT_EQ(store.ListRuns({})->runs(0).cases(), 1u);
  }
  // The migrated schema is the one a fresh database gets: version 1 above was not edited.
  ScratchDir fresh;
  ASSERT_TRUE(RunStore::Open(HistoryDatabasePath(fresh.path())).ok());
  EXPECT_EQ(SchemaOf(path), SchemaOf(HistoryDatabasePath(fresh.path())));
}

TEST(OpenTest, RefusesANewerSchemaAndLeavesItAlone) {
  ScratchDir dir;
  const std::string path = HistoryDatabasePath(dir.path());
  {
    std::unique_ptr<Database> db = OpenRaw(path);
    ASSERT_TRUE(db->Exec("CREATE TABLE runs (x); PRAGMA user_version = 6", "newer").ok());
  }
  const std::string before = ReadBytes(path);
  const absl::Status status = RunStore::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("schema version 6"));
  EXPECT_THAT(status.message(), HasSubstr("upgrade colltest"));
  EXPECT_EQ(ReadBytes(path), before);
  EXPECT_THAT(DirEntries(dir.path()), ElementsAre("history.sqlite3"));
}

TEST(OpenTest, RefusesAFileThatIsNotADatabaseAndLeavesItAlone) {
  ScratchDir dir;
  const std::string path = HistoryDatabasePath(dir.path());
  std::mt19937 random(7);
  std::string bytes(8192, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  WriteBytes(path, bytes);
  const absl::Status status = RunStore::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_EQ(std::string(status.message()),
            absl::StrCat("history database ", path,
                         " is not a usable SQLite database (file is not a database): move it "
                         "away to start with an empty history, or restore a backup"));
  EXPECT_EQ(ReadBytes(path), bytes);
  EXPECT_THAT(DirEntries(dir.path()), ElementsAre("history.sqlite3"));
}

// A real database whose pages (all but the first, which holds the schema) were damaged: only the
// integrity check at open finds it.
TEST(OpenTest, RefusesADatabaseThatFailsItsIntegrityCheck) {
  ScratchDir dir;
  const std::string path = HistoryDatabasePath(dir.path());
  {
    absl::StatusOr<std::unique_ptr<RunStore>> store = RunStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int r = 0; r < 20; ++r) {
      const std::string id = absl::StrCat("r-", r);
      ASSERT_TRUE((*store)->InsertRun(NewRun(id, "x", {v1::VARIANT_LAMPORT})).ok());
      for (uint32_t c = 0; c < 5; ++c) {
        ASSERT_TRUE((*store)->AddCase(id, NewCase(c, v1::CASE_STATUS_OK)).ok());
      }
    }
  }
  std::string bytes = ReadBytes(path);
  ASSERT_GT(bytes.size(), 4 * 4096u);
  for (size_t page = 4096; page < bytes.size(); page += 4096) bytes.replace(page, 8, 8, '\xff');
  WriteBytes(path, bytes);
  const absl::Status status = RunStore::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("history database ", path,
                                                       " is not a usable SQLite database (")));
  EXPECT_THAT(status.message(), HasSubstr("restore a backup"));
  EXPECT_EQ(ReadBytes(path), bytes);
}

TEST(OpenTest, RefusesADirectoryThatIsAFile) {
  ScratchDir dir;
  WriteBytes(dir.File("state"), "not a directory");
  const std::string path = HistoryDatabasePath(dir.File("state"));
  const absl::Status status = RunStore::Open(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("cannot create history database ", path)));
  EXPECT_THAT(status.message(), HasSubstr("not a directory"));
  EXPECT_EQ(ReadBytes(dir.File("state")), "not a directory");
}

// RunStore::Open(path) in a child process that file modes apply to: as root (CI) the child takes
// the uid and gid of nobody first. Returns "CODE MESSAGE", or "" when the child could not drop
// root (no CAP_SETUID).
std::string OpenAsUnprivileged(const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    constexpr uid_t kNobody = 65534;
    if (geteuid() == 0 &&
        (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
         setresuid(kNobody, kNobody, kNobody) != 0)) {
      _exit(77);
    }
    const absl::Status status = RunStore::Open(path).status();
    const std::string out = absl::StrCat(static_cast<int>(status.code()), " ", status.message());
    _exit(write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 77) return "";
  return out;
}

TEST(OpenTest, RefusesADirectoryOrAFileItCannotWrite) {
  ScratchDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);  // the unprivileged child must get through
  const std::string read_only_dir = dir.File("ro");
  ASSERT_EQ(mkdir(read_only_dir.c_str(), 0555), 0);
  const std::string new_file = HistoryDatabasePath(read_only_dir);
  const std::string dir_result = OpenAsUnprivileged(new_file);
  if (dir_result.empty()) GTEST_SKIP() << "running as root without CAP_SETUID: cannot drop root";
  EXPECT_EQ(dir_result,
            absl::StrCat(static_cast<int>(absl::StatusCode::kPermissionDenied),
                         " cannot write history database ", new_file, " (directory ", read_only_dir,
                         ": Permission denied): check its owner and mode"));
  EXPECT_FALSE(std::filesystem::exists(new_file));

  const std::string open_dir = dir.File("rw");
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);  // past the umask
  const std::string read_only_file = HistoryDatabasePath(open_dir);
  ASSERT_TRUE(RunStore::Open(read_only_file).ok());
  ASSERT_EQ(chmod(read_only_file.c_str(), 0444), 0);
  const std::string before = ReadBytes(read_only_file);
  EXPECT_EQ(OpenAsUnprivileged(read_only_file),
            absl::StrCat(static_cast<int>(absl::StatusCode::kPermissionDenied),
                         " cannot write history database ", read_only_file,
                         " (Permission denied): check its owner and mode"));
  EXPECT_EQ(ReadBytes(read_only_file), before);
}

TEST(OpenTest, UsesWriteAheadLogging) {
  ScratchDir dir;
  const std::string path = HistoryDatabasePath(dir.path());
  absl::StatusOr<std::unique_ptr<RunStore>> store = RunStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->InsertRun(NewRun("r-1", "", {})).ok());
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
  std::unique_ptr<Database> other = OpenRaw(path);
  EXPECT_EQ(*other->QueryText("PRAGMA journal_mode", "journal mode"), "wal");
  // A second connection reads what the first committed while the first stays open.
  EXPECT_EQ(*other->QueryInt("SELECT count(*) FROM runs", "count"), 1);
}

}  // namespace
}  // namespace colltest::store
