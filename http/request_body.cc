#include "http/request_body.h"

#include <civetweb.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "http/gateway.h"
#include "http/json_codec.h"
#include "http/query.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

absl::Status TooLarge(mg_connection* conn, uint64_t limit) {
  // Reading the rest only to discard it would let the client keep a worker thread busy; the
  // connection is closed after the reply instead.
  mg_disable_connection_keep_alive(conn);
  return WithHttpStatus(
      absl::ResourceExhaustedError(absl::StrCat("request body exceeds ", limit, " bytes")), 413);
}

}  // namespace

absl::StatusOr<std::string> ReadBody(mg_connection* conn, uint64_t limit) {
  const long long declared = mg_get_request_info(conn)->content_length;  // -1: chunked or none
  if (declared > 0 && static_cast<uint64_t>(declared) > limit) return TooLarge(conn, limit);
  std::string body;
  char buffer[16384];
  // At most limit + 1 bytes are read: one byte past the limit proves the body too large.
  while (body.size() <= limit) {
    const size_t want = std::min<uint64_t>(sizeof(buffer), limit + 1 - body.size());
    const int got = mg_read(conn, buffer, want);
    if (got == 0) return body;
    if (got < 0) {
      mg_disable_connection_keep_alive(conn);
      return absl::InvalidArgumentError("body: cut short (connection closed or bad chunk)");
    }
    body.append(buffer, static_cast<size_t>(got));
  }
  return TooLarge(conn, limit);
}

absl::Status BuildRequestMessage(
    mg_connection* conn, const std::vector<std::pair<std::string, std::string>>& path_params,
    google::protobuf::Message* message) {
  message->Clear();
  const mg_request_info* info = mg_get_request_info(conn);
  if (absl::string_view(info->request_method) == "POST") {
    COLLTEST_ASSIGN_OR_RETURN(const std::string body, ReadBody(conn, kMaxBodyBytes));
    COLLTEST_RETURN_IF_ERROR(ParseJsonBody(body, message));
  }
  if (info->query_string != nullptr) {
    COLLTEST_RETURN_IF_ERROR(ApplyQuery(info->query_string, message));
  }
  for (const auto& [name, value] : path_params) {
    COLLTEST_RETURN_IF_ERROR(SetFieldFromText("path", name, value, message));
  }
  return absl::OkStatus();
}

}  // namespace colltest::http
