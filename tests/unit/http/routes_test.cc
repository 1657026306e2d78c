#include "http/routes.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::http {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(RoutesTest, ApiPathsAndMethods) {
  struct Case {
    const char* method;
    const char* path;
    Endpoint endpoint;
  };
  for (const Case& c :
       {Case{"GET", "/api/v1/devices", Endpoint::kListDevices},
        Case{"GET", "/api/v1/runs", Endpoint::kListRuns},
        Case{"POST", "/api/v1/runs", Endpoint::kSweep},
        Case{"GET", "/api/v1/runs/r-1", Endpoint::kGetRun},
        Case{"POST", "/api/v1/runs/r-1/cancel", Endpoint::kCancel},
        Case{"POST", "/api/v1/health", Endpoint::kHealth},
        Case{"GET", "/api/v1/baselines", Endpoint::kListBaselines},
        Case{"POST", "/api/v1/baselines", Endpoint::kSetBaseline},
        Case{"GET", "/api/v1/compare", Endpoint::kCompare},
        Case{"POST", "/api/v1/sizes:parse", Endpoint::kParseSizes},
        Case{"GET", "/metrics", Endpoint::kMetrics}, Case{"GET", "/healthz", Endpoint::kHealthz},
        Case{"GET", "/", Endpoint::kAsset}, Case{"GET", "/static/app.js", Endpoint::kAsset}}) {
    const RouteMatch match = Route(c.method, c.path);
    EXPECT_EQ(match.kind, RouteMatch::Kind::kFound) << c.method << " " << c.path;
    EXPECT_EQ(match.endpoint, c.endpoint) << c.method << " " << c.path;
  }
}

TEST(RoutesTest, RunIdIsAPathParameter) {
  EXPECT_THAT(Route("GET", "/api/v1/runs/r-42").path_params, ElementsAre(Pair("run_id", "r-42")));
  EXPECT_THAT(Route("POST", "/api/v1/runs/r-42/cancel").path_params,
              ElementsAre(Pair("run_id", "r-42")));
  EXPECT_EQ(Route("GET", "/api/v1/runs/").kind, RouteMatch::Kind::kNotFound);
}

TEST(RoutesTest, KnownPathWithAnotherMethodListsItsMethods) {
  RouteMatch match = Route("DELETE", "/api/v1/runs");
  EXPECT_EQ(match.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(match.allow, "GET, POST");
  match = Route("GET", "/api/v1/runs/r-1/cancel");
  EXPECT_EQ(match.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(match.allow, "POST");
  match = Route("POST", "/");
  EXPECT_EQ(match.kind, RouteMatch::Kind::kMethodNotAllowed);
  EXPECT_EQ(match.allow, "GET");
}

TEST(RoutesTest, UnknownApiPathsAreNotFound) {
  for (const char* path : {"/api", "/api/", "/api/v1", "/api/v1/devices/x", "/api/v1/Devices",
                           "/api/v1/runs/a/b", "/api/v1/runs/a/cancel/x"}) {
    EXPECT_EQ(Route("GET", path).kind, RouteMatch::Kind::kNotFound) << path;
  }
}

}  // namespace
}  // namespace colltest::http
