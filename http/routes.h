// The HTTP port's paths (docs/http-api.md): which endpoint a method and path name, the path's
// {run_id}, and for a known path with another method the methods it takes (405 with Allow).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace colltest::http {

enum class Endpoint {
  kListDevices,    // GET /api/v1/devices
  kListRuns,       // GET /api/v1/runs
  kSweep,          // POST /api/v1/runs (streamed)
  kGetRun,         // GET /api/v1/runs/{run_id}
  kCancel,         // POST /api/v1/runs/{run_id}/cancel
  kHealth,         // POST /api/v1/health
  kListBaselines,  // GET /api/v1/baselines
  kSetBaseline,    // POST /api/v1/baselines
  kCompare,        // GET /api/v1/compare
  kParseSizes,     // POST /api/v1/sizes:parse (the gateway's own: size_lists.h)
  kMetrics,        // GET /metrics
  kHealthz,        // GET /healthz
  kAsset,          // GET of any other path outside /api/: the dashboard's files
};

struct RouteMatch {
  enum class Kind {
    kFound,             // `endpoint` with `path_params`
    kNotFound,          // no such path
    kMethodNotAllowed,  // the path exists; `allow` lists its methods ("GET, POST")
  };
  Kind kind = Kind::kNotFound;
  Endpoint endpoint = Endpoint::kAsset;
  // {name, value} of each {name} segment of the path's pattern, e.g. {"run_id", "r-42"}.
  std::vector<std::pair<std::string, std::string>> path_params;
  std::string allow;
};

// The endpoint of `method` on `path` (the decoded path, without the query string).
RouteMatch Route(absl::string_view method, absl::string_view path);

}  // namespace colltest::http
