#include "http/request_body.h"

#include <civetweb.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "http/gateway_options.h"
#include "http/json_codec.h"
#include "http/query.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

// Every error of ReadBody leaves the rest of the body unread: reading it only to discard it would
// let the client keep a worker thread busy, so the connection is closed after the reply instead.
absl::Status Refused(mg_connection* conn, absl::Status status) {
  mg_disable_connection_keep_alive(conn);
  return status;
}

absl::Status TooLarge(mg_connection* conn, uint64_t limit) {
  return Refused(conn, WithHttpStatus(absl::ResourceExhaustedError(
                                          absl::StrCat("request body exceeds ", limit, " bytes")),
                                      413));
}

absl::Status TooSlow(mg_connection* conn, const BodyRules& rules, size_t received) {
  return Refused(conn, WithHttpStatus(absl::DeadlineExceededError(absl::StrCat(
                                          "request body not received within ",
                                          absl::FormatDuration(rules.timeout), " (", received,
                                          " bytes came; --http-body-timeout)")),
                                      408));
}

absl::Status Silent(mg_connection* conn, const BodyRules& rules, size_t received,
                    long long declared) {
  return Refused(conn, WithHttpStatus(absl::DeadlineExceededError(
                                          absl::StrCat("request body: ", received, " of ", declared,
                                                       " bytes came, then nothing for ",
                                                       absl::FormatDuration(rules.silence))),
                                      408));
}

// Whether the request declares a body (a length or chunks).
bool HasBody(mg_connection* conn) {
  return mg_get_request_info(conn)->content_length > 0 ||
         mg_get_header(conn, "Transfer-Encoding") != nullptr;
}

// Reads until the end of the body, `limit` + 1 bytes (which prove it too large) or an error;
// `expired` says whether the deadline has passed.
template <typename Expired>
absl::StatusOr<std::string> ReadUpTo(mg_connection* conn, const BodyRules& rules,
                                     const Expired& expired) {
  const long long declared = mg_get_request_info(conn)->content_length;  // -1: chunked or none
  std::string body;
  char buffer[16384];
  while (body.size() <= rules.max_bytes) {
    const size_t want = std::min<uint64_t>(sizeof(buffer), rules.max_bytes + 1 - body.size());
    const int got = mg_read(conn, buffer, want);
    if (expired()) return TooSlow(conn, rules, body.size());
    if (got < 0) {
      return Refused(
          conn, absl::InvalidArgumentError("body: cut short (connection closed or bad chunk)"));
    }
    // CivetWeb ends a read that waited `silence` for a byte as if the body had ended.
    if (got == 0 && declared > 0 && body.size() < static_cast<uint64_t>(declared)) {
      return Silent(conn, rules, body.size(), declared);
    }
    if (got == 0) return body;
    body.append(buffer, static_cast<size_t>(got));
  }
  return TooLarge(conn, rules.max_bytes);
}

}  // namespace

BodyRules BodyRulesOf(const HandlerContext& handlers) {
  BodyRules rules;
  rules.timeout = absl::Milliseconds(handlers.options->body_timeout_ms);
  rules.silence = absl::Milliseconds(handlers.options->request_timeout_ms);
  rules.admission = handlers.admission;
  rules.deadlines = handlers.deadlines;
  return rules;
}

absl::StatusOr<std::string> ReadBody(mg_connection* conn, const BodyRules& rules) {
  const mg_request_info* info = mg_get_request_info(conn);
  const long long declared = info->content_length;  // -1: chunked or none
  if (declared > 0 && static_cast<uint64_t>(declared) > rules.max_bytes) {
    return TooLarge(conn, rules.max_bytes);
  }
  if (!HasBody(conn)) return std::string();
  std::optional<BodyAdmission::Ticket> ticket;
  if (rules.admission != nullptr) {
    absl::StatusOr<BodyAdmission::Ticket> admitted = rules.admission->Admit(info->remote_addr);
    if (!admitted.ok()) return Refused(conn, admitted.status());
    ticket.emplace(*std::move(admitted));
  }
  const absl::Time deadline = absl::Now() + rules.timeout;
  // Without the socket (no /proc), the deadline is checked between reads only; the cap on
  // readers still bounds how many threads slow bodies hold.
  const absl::StatusOr<int> socket =
      rules.deadlines != nullptr ? ConnectionSocket(conn) : absl::NotFoundError("no watchdog");
  std::optional<ReadDeadlines::Watch> watch;
  if (socket.ok()) watch.emplace(rules.deadlines, *socket, deadline);
  return ReadUpTo(conn, rules, [&] {
    return (watch.has_value() && watch->expired()) || absl::Now() >= deadline;
  });
}

absl::Status BuildRequestMessage(
    mg_connection* conn, const HandlerContext& handlers,
    const std::vector<std::pair<std::string, std::string>>& path_params,
    google::protobuf::Message* message) {
  message->Clear();
  const mg_request_info* info = mg_get_request_info(conn);
  if (absl::string_view(info->request_method) == "POST") {
    COLLTEST_ASSIGN_OR_RETURN(const std::string body, ReadBody(conn, BodyRulesOf(handlers)));
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
