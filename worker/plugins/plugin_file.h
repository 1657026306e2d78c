// Opening a plugin's shared library as only the operator may have placed it (docs/plugins.md):
// a regular file, and every folder above it, owned by root or by the worker's own user and
// writable by nobody else, as sshd's StrictModes treats key files. A folder writable by others
// passes only with the sticky bit (/tmp), where nobody else can rename or replace our entries.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace colltest::worker::plugins {

struct PluginFile {
  UniqueFd fd;         // open read-only: what is hashed is what is loaded (LoadPath)
  std::string path;    // as given, for messages
  std::string sha256;  // of the file's bytes, 64 lowercase hex digits
};

// Opens `path` and checks its owner and mode and those of every folder above it, then hashes it.
// PERMISSION_DENIED names the path and what is loose ("... is writable by its group (mode 0664);
// only its owner may write it"); NOT_FOUND or FAILED_PRECONDITION when it cannot be read.
absl::StatusOr<PluginFile> OpenPluginFile(const std::string& path);

// The name dlopen is given for an open file: /proc/self/fd/N, so that the loader maps the very
// file that was checked and hashed, whatever happens to the path afterwards.
std::string LoadPath(const PluginFile& file);

}  // namespace colltest::worker::plugins
