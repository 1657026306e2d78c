// The controller's private directory for worker sockets.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace colltest::server {

// A fresh 0700 directory named colltest-XXXXXX, so that no other user can connect to a worker's
// socket or plant one in its place. Removed with everything in it on destruction.
class RuntimeDir {
 public:
  // `parent` empty means $XDG_RUNTIME_DIR, or /tmp where that is unset.
  static absl::StatusOr<std::unique_ptr<RuntimeDir>> Create(absl::string_view parent);
  ~RuntimeDir();

  RuntimeDir(const RuntimeDir&) = delete;
  RuntimeDir& operator=(const RuntimeDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit RuntimeDir(std::string path) : path_(std::move(path)) {}

  std::string path_;
};

}  // namespace colltest::server
