#include "http/json_codec.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace colltest::http {

absl::Status ParseJsonBody(absl::string_view body, google::protobuf::Message* message) {
  message->Clear();
  // curl -d '' and an empty POST both mean "all defaults", as {} would.
  if (absl::StripAsciiWhitespace(body).empty()) return absl::OkStatus();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(body.data(), body.size()), message, options);
  if (parsed.ok()) return absl::OkStatus();
  message->Clear();
  return absl::InvalidArgumentError(
      absl::StrCat("body: not a ", message->GetTypeName(), ": ", std::string(parsed.message())));
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;  // one line: a sweep's events are newline-delimited
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  // Printing a valid message cannot fail; a failure would be a bug in protobuf, answered as "{}"
  // rather than with half an object.
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

}  // namespace colltest::http
