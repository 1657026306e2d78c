// The port's pages outside the API: /healthz, /metrics (Prometheus text behind optional HTTP
// Basic) and the dashboard's files.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "http/gateway_options.h"

struct mg_connection;

namespace colltest::http {

// GET /healthz: 200 "ok\n" while the port serves (liveness; no authentication).
int ServeHealthz(mg_connection* conn);

// GET /metrics: options.render_metrics's text; 404 without one; 401 with WWW-Authenticate when
// options.metrics_basic_auth rejects the request's credentials (or it has none).
int ServeMetrics(mg_connection* conn, const GatewayOptions& options);

// GET of a dashboard path: options.find_asset's file with its content type; 404 when none.
int ServeAsset(mg_connection* conn, absl::string_view path, const GatewayOptions& options);

// {user, password} of an "Authorization: Basic ..." value; nullopt when it is not one.
std::optional<std::pair<std::string, std::string>> ParseBasicAuth(absl::string_view header);

}  // namespace colltest::http
