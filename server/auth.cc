#include "server/auth.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace colltest::server {
namespace {

// Compares in time that depends only on the lengths, so a client cannot find the token byte by
// byte from response times.
bool SameSecret(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace

absl::Status TokenAuth::Check(const grpc::ServerContext& context) const {
  if (token_.empty()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError(
        "missing \"authorization: Bearer <token>\" metadata (colltest --token-file)");
  }
  absl::string_view value(it->second.data(), it->second.size());
  constexpr absl::string_view kScheme = "Bearer ";
  if (!absl::StartsWithIgnoreCase(value, kScheme) ||
      !SameSecret(value.substr(kScheme.size()), token_)) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--token-file ", path, ": cannot read it"));
  std::string line;
  std::getline(in, line);
  std::string token(absl::StripAsciiWhitespace(line));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file ", path, ": the token is empty"));
  }
  return token;
}

}  // namespace colltest::server
