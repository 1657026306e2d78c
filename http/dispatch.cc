#include "http/dispatch.h"

#include <civetweb.h>

#include "absl/strings/str_cat.h"
#include "http/origin_check.h"
#include "http/pages.h"
#include "http/reply.h"
#include "http/routes.h"
#include "http/size_lists.h"
#include "http/status_map.h"
#include "http/sweep_stream.h"
#include "http/unary_calls.h"

namespace colltest::http {
namespace {

int ServeFound(mg_connection* conn, absl::string_view path, const RouteMatch& match,
               const HandlerContext& handlers) {
  switch (match.endpoint) {
    case Endpoint::kSweep:
      return ServeSweep(conn, match, handlers);
    case Endpoint::kParseSizes:
      return ServeParseSizes(conn, handlers);
    case Endpoint::kMetrics:
      return ServeMetrics(conn, *handlers.options);
    case Endpoint::kHealthz:
      return ServeHealthz(conn);
    case Endpoint::kAsset:
      return ServeAsset(conn, path, *handlers.options);
    default:
      return ServeUnary(conn, match, handlers);
  }
}

// Whether the request carries a body (declared length or chunked).
bool HasBody(mg_connection* conn) {
  return mg_get_request_info(conn)->content_length > 0 ||
         mg_get_header(conn, "Transfer-Encoding") != nullptr;
}

// The rules that keep other web pages out (origin_check.h): the Host and Origin headers of every
// request, and the Content-Type of a POST the API takes.
absl::Status CheckBrowserRules(mg_connection* conn, const RouteMatch& match,
                               const HandlerContext& handlers) {
  const mg_request_info* info = mg_get_request_info(conn);
  const char* host = mg_get_header(conn, "Host");
  if (absl::Status ok = CheckHost(host, info->server_port, *handlers.browser); !ok.ok()) return ok;
  if (absl::Status ok = CheckOrigin(mg_get_header(conn, "Origin"), host, *handlers.browser);
      !ok.ok()) {
    return ok;
  }
  if (match.kind == RouteMatch::Kind::kFound && absl::string_view(info->request_method) == "POST") {
    return CheckJsonContentType(mg_get_header(conn, "Content-Type"));
  }
  return absl::OkStatus();
}

}  // namespace

int HandleRequest(mg_connection* conn, const HandlerContext& handlers) {
  const mg_request_info* info = mg_get_request_info(conn);
  // local_uri: decoded, without the query string, with dot segments removed.
  const absl::string_view path = info->local_uri != nullptr ? info->local_uri : "";
  const absl::string_view method = info->request_method;
  const RouteMatch match = Route(method, path);
  // Only a found POST reads its body (request_body.h: bounded in size and time). Any other body
  // CivetWeb would read to its end, unbounded, to keep the connection open; closing the connection
  // instead bounds it.
  const bool reads_body = match.kind == RouteMatch::Kind::kFound && method == "POST";
  if (!reads_body && HasBody(conn)) mg_disable_connection_keep_alive(conn);
  if (absl::Status allowed = CheckBrowserRules(conn, match, handlers); !allowed.ok()) {
    if (HasBody(conn)) mg_disable_connection_keep_alive(conn);
    return SendError(conn, allowed);
  }
  switch (match.kind) {
    case RouteMatch::Kind::kFound:
      return ServeFound(conn, path, match, handlers);
    case RouteMatch::Kind::kMethodNotAllowed:
      return SendError(conn,
                       WithHttpStatus(absl::UnimplementedError(absl::StrCat(
                                          method, " ", path,
                                          ": method not allowed (allowed: ", match.allow, ")")),
                                      405),
                       {{"Allow", match.allow}});
    case RouteMatch::Kind::kNotFound:
      break;
  }
  return SendError(conn, absl::NotFoundError(absl::StrCat(path, ": no such API path")));
}

}  // namespace colltest::http
