#include "http/openssl_compat.h"

#include <dlfcn.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace colltest::http {
namespace {

constexpr char kShimName[] = "libcolltest_civetweb_ssl.so";

// A private library of the installed tree (cmake/ColltestInstall.cmake): PREFIX/lib/colltest,
// found from PREFIX/bin so that any --prefix (and the .deb's /usr) works without an rpath.
constexpr char kInstalledDir[] = "../lib/colltest/";

// Where to look: next to the executable (the build tree's bin/), the installed tree's private
// library folder, then where it was built.
std::vector<std::string> Candidates() {
  std::vector<std::string> paths;
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length > 0) {
    const std::string exe(self, static_cast<size_t>(length));
    const std::string bin = exe.substr(0, exe.rfind('/') + 1);
    paths.push_back(absl::StrCat(bin, kShimName));
    paths.push_back(absl::StrCat(bin, kInstalledDir, kShimName));
  }
#ifdef COLLTEST_CIVETWEB_SSL_SHIM
  paths.push_back(COLLTEST_CIVETWEB_SSL_SHIM);
#endif
  return paths;
}

absl::Status Load() {
  // OpenSSL 1.1 (or a libssl that kept the symbol) needs nothing.
  if (dlsym(RTLD_DEFAULT, "SSL_get_peer_certificate") != nullptr) return absl::OkStatus();
  std::vector<std::string> errors;
  for (const std::string& path : Candidates()) {
    // Never closed: CivetWeb keeps the functions it looked up for the life of the process.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr) return absl::OkStatus();
    const char* error = dlerror();
    errors.push_back(error != nullptr ? error : path);
  }
  return absl::FailedPreconditionError(absl::StrCat("TLS: CivetWeb cannot use OpenSSL 3 without ",
                                                    kShimName, " (", absl::StrJoin(errors, "; "),
                                                    ")"));
}

}  // namespace

absl::Status PrepareCivetWebOpenSsl() {
  static const absl::Status* const loaded = new absl::Status(Load());
  return *loaded;
}

}  // namespace colltest::http
