#include "http/size_lists.h"

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "colltest/v1/colltest.pb.h"
#include "common/parse.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"
#include "http/json_codec.h"
#include "http/reply.h"
#include "http/request_body.h"

namespace colltest::http {
namespace {

using google::protobuf::FieldDescriptor;

// Whether SweepSpec has a list of uint32 named `name` (m, n, devices): the fields a list of
// numbers is given for, whose type also sets the limit of each value.
bool IsSizeListField(const std::string& name) {
  const FieldDescriptor* field = colltest::v1::SweepSpec::descriptor()->FindFieldByName(name);
  return field != nullptr && field->is_repeated() &&
         field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32;
}

absl::StatusOr<std::vector<uint64_t>> ExpandField(const std::string& name,
                                                  const google::protobuf::Value& value) {
  if (!IsSizeListField(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a list field of colltest.v1.SweepSpec (m, n, devices)"));
  }
  if (value.kind_case() != google::protobuf::Value::kStringValue) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected the list as a string, such as \"1,8,64\" or \"1:64:x4\""));
  }
  return common::ParseList(name, value.string_value(), std::numeric_limits<uint32_t>::max());
}

}  // namespace

absl::StatusOr<std::string> ExpandSizeLists(absl::string_view body) {
  google::protobuf::Struct request;
  COLLTEST_RETURN_IF_ERROR(ParseJsonBody(body, &request));
  // In name order, so that the reply and the first error do not depend on the map's order.
  const std::map<std::string, google::protobuf::Value> fields(request.fields().begin(),
                                                              request.fields().end());
  std::vector<std::string> members;
  for (const auto& [name, value] : fields) {
    COLLTEST_ASSIGN_OR_RETURN(const std::vector<uint64_t> values, ExpandField(name, value));
    // `name` is a proto field name (checked above): nothing in it needs escaping.
    members.push_back(absl::StrCat("\"", name, "\":[", absl::StrJoin(values, ","), "]"));
  }
  return absl::StrCat("{", absl::StrJoin(members, ","), "}");
}

int ServeParseSizes(mg_connection* conn, const HandlerContext& handlers) {
  absl::StatusOr<std::string> body = ReadBody(conn, BodyRulesOf(handlers));
  if (!body.ok()) return SendError(conn, body.status());
  absl::StatusOr<std::string> reply = ExpandSizeLists(*body);
  if (!reply.ok()) return SendError(conn, reply.status());
  return SendJson(conn, 200, *reply);
}

}  // namespace colltest::http
