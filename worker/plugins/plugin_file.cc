#include "worker/plugins/plugin_file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace colltest::worker::plugins {
namespace {

std::string Mode(mode_t mode) { return absl::StrFormat("mode %04o", mode & 07777); }

// Owner root or this process's user, and writable by nobody else (a sticky folder excepted).
absl::Status CheckOwnerAndMode(const std::string& what, const struct stat& st, bool folder) {
  const uid_t self = geteuid();
  if (st.st_uid != 0 && st.st_uid != self) {
    return absl::PermissionDeniedError(absl::StrCat(what, " is owned by uid ", st.st_uid,
                                                    "; only root (uid 0) or this worker's ",
                                                    "user (uid ", self, ") may own it"));
  }
  if (folder && (st.st_mode & S_ISVTX) != 0) return absl::OkStatus();  // sticky: see the header
  // Others first: the wider opening is the one to name when both are open.
  for (const auto& [bit, who] : {std::pair{S_IWOTH, "others"}, std::pair{S_IWGRP, "its group"}}) {
    if ((st.st_mode & bit) != 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          what, " is writable by ", who, " (", Mode(st.st_mode), "); only its owner may write it"));
    }
  }
  return absl::OkStatus();
}

// Every folder from the file's up to /, by the path's real location.
absl::Status CheckFolders(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> real(realpath(path.c_str(), nullptr), &free);
  if (real == nullptr) {
    return absl::NotFoundError(absl::StrCat("kernel plugin ", path, ": ", std::strerror(errno)));
  }
  for (std::filesystem::path folder = std::filesystem::path(real.get()).parent_path();;
       folder = folder.parent_path()) {
    struct stat st;
    if (stat(folder.c_str(), &st) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "kernel plugin ", path, ": folder ", folder.string(), ": ", std::strerror(errno)));
    }
    COLLTEST_RETURN_IF_ERROR(CheckOwnerAndMode(
        absl::StrCat("the folder ", folder.string(), " of kernel plugin ", path), st, true));
    if (folder == folder.root_path()) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Sha256(int fd, const std::string& path) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (ctx == nullptr || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("SHA-256: OpenSSL could not start a digest");
  }
  std::vector<unsigned char> buffer(1 << 16);
  for (off_t at = 0;;) {
    const ssize_t got = pread(fd, buffer.data(), buffer.size(), at);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("kernel plugin ", path, ": read: ", std::strerror(errno)));
    }
    if (got == 0) break;
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(got));
    at += got;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) absl::StrAppendFormat(&hex, "%02x", digest[i]);
  return hex;
}

}  // namespace

absl::StatusOr<PluginFile> OpenPluginFile(const std::string& path) {
  PluginFile file;
  file.path = path;
  file.fd.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!file.fd.valid()) {
    return absl::NotFoundError(absl::StrCat("kernel plugin ", path, ": ", std::strerror(errno),
                                            errno == ELOOP ? " (a symbolic link)" : ""));
  }
  struct stat st;
  if (fstat(file.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel plugin ", path, ": not a regular file"));
  }
  COLLTEST_RETURN_IF_ERROR(CheckOwnerAndMode(absl::StrCat("kernel plugin ", path), st, false));
  COLLTEST_RETURN_IF_ERROR(CheckFolders(path));
  COLLTEST_ASSIGN_OR_RETURN(file.sha256, Sha256(file.fd.get(), path));
  return file;
}

std::string LoadPath(const PluginFile& file) {
  return absl::StrCat("/proc/self/fd/", file.fd.get());
}

}  // namespace colltest::worker::plugins
