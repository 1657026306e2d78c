#include "http/status_map.h"

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace colltest::http {
namespace {

// Where WithHttpStatus keeps the HTTP status in a Status's payloads.
constexpr absl::string_view kHttpStatusPayload = "type.colltest.dev/http-status";

}  // namespace

int HttpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;  // the client closed the request (nginx's code; no standard one exists)
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    case absl::StatusCode::kUnimplemented:
      return 501;
    default:
      return 500;
  }
}

absl::string_view CodeName(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return "OK";
    case absl::StatusCode::kCancelled:
      return "CANCELLED";
    case absl::StatusCode::kUnknown:
      return "UNKNOWN";
    case absl::StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case absl::StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case absl::StatusCode::kNotFound:
      return "NOT_FOUND";
    case absl::StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case absl::StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case absl::StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case absl::StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case absl::StatusCode::kAborted:
      return "ABORTED";
    case absl::StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case absl::StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case absl::StatusCode::kInternal:
      return "INTERNAL";
    case absl::StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case absl::StatusCode::kDataLoss:
      return "DATA_LOSS";
    case absl::StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

absl::Status WithHttpStatus(absl::Status status, int http_status) {
  status.SetPayload(kHttpStatusPayload, absl::Cord(absl::StrCat(http_status)));
  return status;
}

int HttpStatusOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kHttpStatusPayload);  // absl::optional<absl::Cord>
  int http_status = 0;
  if (payload && absl::SimpleAtoi(std::string(*payload), &http_status)) return http_status;
  return HttpStatusFor(status.code());
}

std::string ErrorJson(const absl::Status& status) {
  const nlohmann::ordered_json error = {{"code", std::string(CodeName(status.code()))},
                                        {"message", std::string(status.message())}};
  // A message may quote bytes a client sent: what is not UTF-8 becomes U+FFFD rather than an
  // exception.
  return error.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace colltest::http
