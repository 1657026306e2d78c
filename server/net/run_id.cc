#include "server/net/run_id.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"

namespace colltest::server {
namespace {

constexpr size_t kIdBytes = 16;  // 128 bits: 32 hex digits

void FillRandom(std::array<unsigned char, kIdBytes>& bytes) {
  size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got > 0) {
      filled += static_cast<size_t>(got);
    } else if (got < 0 && errno != EINTR) {
      std::fprintf(stderr, "colltestd: getrandom: %s: cannot make unguessable run ids\n",
                   std::strerror(errno));
      std::abort();
    }
  }
}

}  // namespace

std::string NewSecret() {
  std::array<unsigned char, kIdBytes> bytes{};
  FillRandom(bytes);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string NewRunId() { return "r-" + NewSecret(); }

}  // namespace colltest::server
