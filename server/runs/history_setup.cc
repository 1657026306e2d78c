#include "server/runs/history_setup.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace colltest::server {

absl::StatusOr<OpenedHistory> OpenHistory(const std::string& state_dir_flag) {
  OpenedHistory history;
  COLLTEST_ASSIGN_OR_RETURN(history.state_dir, store::ResolveStateDir(state_dir_flag));
  COLLTEST_ASSIGN_OR_RETURN(history.lock, store::LockStateDir(history.state_dir));
  COLLTEST_ASSIGN_OR_RETURN(history.store,
                            store::RunStore::Open(store::HistoryDatabasePath(history.state_dir)));
  // Safe only because the lock is ours: no other colltestd writes these runs.
  COLLTEST_ASSIGN_OR_RETURN(
      std::vector<std::string> interrupted,
      history.store->MarkInterrupted(
          "colltestd stopped while this run was queued or running (killed or crashed, or its end "
          "could not be written); the cases it finished are kept",
          absl::ToUnixMillis(absl::Now())));
  if (!interrupted.empty()) {
    spdlog::warn(
        "history: {} run(s) left by a colltestd that did not stop cleanly are now "
        "INTERRUPTED: {}",
        interrupted.size(), absl::StrJoin(interrupted, ", "));
  }
  spdlog::info("history: {} (schema {})", history.store->path(), history.store->schema_version());
  return history;
}

}  // namespace colltest::server
