#include "http/routes.h"

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace colltest::http {
namespace {

struct RouteSpec {
  absl::string_view method;
  absl::string_view pattern;  // "/"-separated; a segment "{name}" matches any non-empty segment
  Endpoint endpoint;
};

// The API's table. Paths outside /api/ are matched in Route itself.
constexpr RouteSpec kApiRoutes[] = {
    {"GET", "/api/v1/devices", Endpoint::kListDevices},
    {"GET", "/api/v1/runs", Endpoint::kListRuns},
    {"POST", "/api/v1/runs", Endpoint::kSweep},
    {"GET", "/api/v1/runs/{run_id}", Endpoint::kGetRun},
    {"POST", "/api/v1/runs/{run_id}/cancel", Endpoint::kCancel},
    {"POST", "/api/v1/health", Endpoint::kHealth},
    {"GET", "/api/v1/baselines", Endpoint::kListBaselines},
    {"POST", "/api/v1/baselines", Endpoint::kSetBaseline},
    {"GET", "/api/v1/compare", Endpoint::kCompare},
    {"POST", "/api/v1/sizes:parse", Endpoint::kParseSizes},
};

// Whether `path` fits `pattern`; the values of its {name} segments go to `params`.
bool Matches(absl::string_view pattern, absl::string_view path,
             std::vector<std::pair<std::string, std::string>>* params) {
  const std::vector<absl::string_view> want = absl::StrSplit(pattern, '/');
  const std::vector<absl::string_view> got = absl::StrSplit(path, '/');
  if (want.size() != got.size()) return false;
  params->clear();
  for (size_t i = 0; i < want.size(); ++i) {
    if (absl::StartsWith(want[i], "{") && absl::EndsWith(want[i], "}")) {
      if (got[i].empty()) return false;
      params->emplace_back(want[i].substr(1, want[i].size() - 2), got[i]);
    } else if (want[i] != got[i]) {
      return false;
    }
  }
  return true;
}

RouteMatch Found(Endpoint endpoint) {
  RouteMatch match;
  match.kind = RouteMatch::Kind::kFound;
  match.endpoint = endpoint;
  return match;
}

RouteMatch ApiRoute(absl::string_view method, absl::string_view path) {
  RouteMatch match;
  std::vector<absl::string_view> allowed;
  std::vector<std::pair<std::string, std::string>> params;
  for (const RouteSpec& spec : kApiRoutes) {
    if (!Matches(spec.pattern, path, &params)) continue;
    if (spec.method == method) {
      match = Found(spec.endpoint);
      match.path_params = std::move(params);
      return match;
    }
    allowed.push_back(spec.method);
  }
  if (!allowed.empty()) {
    match.kind = RouteMatch::Kind::kMethodNotAllowed;
    match.allow = absl::StrJoin(allowed, ", ");
  }
  return match;
}

}  // namespace

RouteMatch Route(absl::string_view method, absl::string_view path) {
  if (path == "/api" || absl::StartsWith(path, "/api/")) return ApiRoute(method, path);
  // Everything else is read-only: /metrics, /healthz and the dashboard's files.
  if (method != "GET") {
    RouteMatch match;
    match.kind = RouteMatch::Kind::kMethodNotAllowed;
    match.allow = "GET";
    return match;
  }
  if (path == "/metrics") return Found(Endpoint::kMetrics);
  if (path == "/healthz") return Found(Endpoint::kHealthz);
  return Found(Endpoint::kAsset);
}

}  // namespace colltest::http
