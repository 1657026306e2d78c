// colltestd's history at start: the state directory resolved and locked, the database opened (or
// a clear error naming the file), and the runs a killed colltestd left behind marked INTERRUPTED.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/run_store.h"
#include "store/state_dir.h"

namespace colltest::server {

struct OpenedHistory {
  std::string state_dir;
  store::StateDirLock lock;  // held while colltestd runs: one colltestd per state directory
  std::unique_ptr<store::RunStore> store;
};

absl::StatusOr<OpenedHistory> OpenHistory(const std::string& state_dir_flag);

}  // namespace colltest::server
