// The service names colltestd's health services answer for (grpc.health.v1): "" (the process is
// up) and the API's own service (the worker groups are healthy). Shared by the --health-listen
// server (health_listener.h) and whatever sets the statuses (server/serving_state.h).
#pragma once

namespace colltest::server {

inline constexpr char kCollectiveTestService[] = "colltest.v1.CollectiveTest";

}  // namespace colltest::server
