#include "http/pages.h"

#include <civetweb.h>

#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "http/reply.h"

namespace colltest::http {
namespace {

// The dashboard ships every script and style it uses (no CDN), so the page may load only its own
// files; inline styles (style attributes, <style>) are allowed, scripts only from files.
constexpr absl::string_view kDashboardCsp = "default-src 'self'; style-src 'self' 'unsafe-inline'";
// Prometheus's text exposition format.
constexpr absl::string_view kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

bool BasicAuthAccepted(mg_connection* conn, const GatewayOptions& options) {
  if (!options.metrics_basic_auth) return true;
  const char* header = mg_get_header(conn, "Authorization");
  if (header == nullptr) return false;
  const auto credentials = ParseBasicAuth(header);
  return credentials && options.metrics_basic_auth(credentials->first, credentials->second);
}

}  // namespace

int ServeHealthz(mg_connection* conn) {
  return SendReply(conn, 200, "text/plain; charset=utf-8", "ok\n", {{"Cache-Control", "no-store"}});
}

int ServeMetrics(mg_connection* conn, const GatewayOptions& options) {
  if (!options.render_metrics) return SendError(conn, absl::NotFoundError("/metrics: not served"));
  if (!BasicAuthAccepted(conn, options)) {
    return SendError(conn, absl::UnauthenticatedError("/metrics: HTTP Basic credentials needed"),
                     {{"WWW-Authenticate", "Basic realm=\"colltestd\""}});
  }
  return SendReply(conn, 200, kMetricsType, options.render_metrics(),
                   {{"Cache-Control", "no-store"}});
}

int ServeAsset(mg_connection* conn, absl::string_view path, const GatewayOptions& options) {
  const dashboard::Asset* asset =
      options.find_asset ? options.find_asset(std::string_view(path.data(), path.size())) : nullptr;
  if (asset == nullptr) {
    return SendError(conn, absl::NotFoundError(absl::StrCat(path, ": no such page")));
  }
  const absl::string_view type(asset->content_type.data(), asset->content_type.size());
  const absl::string_view body(asset->body.data(), asset->body.size());
  // no-cache: a browser revalidates, so a new colltestd's dashboard shows at once.
  if (absl::StartsWith(type, "text/html")) {
    return SendReply(conn, 200, type, body,
                     {{"Cache-Control", "no-cache"}, {"Content-Security-Policy", kDashboardCsp}});
  }
  return SendReply(conn, 200, type, body, {{"Cache-Control", "no-cache"}});
}

std::optional<std::pair<std::string, std::string>> ParseBasicAuth(absl::string_view header) {
  absl::string_view value = absl::StripLeadingAsciiWhitespace(header);
  // The scheme is case-insensitive (RFC 7617).
  if (value.size() < 6 || !absl::EqualsIgnoreCase(value.substr(0, 6), "basic ")) {
    return std::nullopt;
  }
  std::string decoded;
  if (!absl::Base64Unescape(absl::StripAsciiWhitespace(value.substr(6)), &decoded)) {
    return std::nullopt;
  }
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(decoded.substr(0, colon), decoded.substr(colon + 1));
}

}  // namespace colltest::http
