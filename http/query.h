// Query parameters and path segments as fields of a request message, in the manner of
// grpc-gateway: `?limit=5&state=RUN_STATE_DONE` sets ListRunsRequest.limit and .state. A
// parameter names a top-level scalar field by its proto name; enums are given by value name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace colltest::http {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// "a=1&b=x%20y" -> {{"a","1"},{"b","x y"}}: %XX and '+' (a space) decoded in names and values; a
// parameter without '=' has an empty value; empty pieces ("a=1&&b=2") are skipped. A bad escape
// is INVALID_ARGUMENT naming the parameter.
absl::StatusOr<QueryParams> ParseQuery(absl::string_view query);

// Sets the field `name` of `message` from its text `value`. `source` says where it came from in
// errors ("query parameter", "path"). INVALID_ARGUMENT naming `name` when there is no such field,
// the field is not a scalar, or the value does not parse as the field's type.
absl::Status SetFieldFromText(absl::string_view source, absl::string_view name,
                              absl::string_view value, google::protobuf::Message* message);

// Every parameter of `query` set on `message`; a parameter given twice is an error.
absl::Status ApplyQuery(absl::string_view query, google::protobuf::Message* message);

}  // namespace colltest::http
