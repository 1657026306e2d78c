#include "http/query.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"

namespace colltest::http {
namespace {

using google::protobuf::FieldDescriptor;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded decoding of one name or value; false on a bad %-escape.
bool FormDecode(absl::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      *out += ' ';
    } else if (text[i] != '%') {
      *out += text[i];
    } else {
      if (i + 2 >= text.size()) return false;
      const int high = HexValue(text[i + 1]);
      const int low = HexValue(text[i + 2]);
      if (high < 0 || low < 0) return false;
      *out += static_cast<char>(high * 16 + low);
      i += 2;
    }
  }
  return true;
}

absl::Status BadValue(absl::string_view source, absl::string_view name, absl::string_view value,
                      absl::string_view type) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, " \"", name, "\": \"", value, "\" is not a ", type));
}

// Sets an integer field of type T with `setter` after parsing `value` strictly (no sign for the
// unsigned types, no trailing text).
template <typename T, typename Setter>
absl::Status SetInteger(absl::string_view source, const FieldDescriptor* field,
                        absl::string_view value, Setter setter) {
  T parsed{};
  if (!absl::SimpleAtoi(value, &parsed)) {
    return BadValue(source, field->name(), value, field->type_name());
  }
  setter(parsed);
  return absl::OkStatus();
}

absl::Status SetEnum(absl::string_view source, const FieldDescriptor* field,
                     absl::string_view value, google::protobuf::Message* message) {
  const google::protobuf::EnumValueDescriptor* enum_value =
      field->enum_type()->FindValueByName(std::string(value));
  if (enum_value == nullptr) {
    return BadValue(source, field->name(), value, field->enum_type()->full_name());
  }
  message->GetReflection()->SetEnum(message, field, enum_value);
  return absl::OkStatus();
}

absl::Status SetFloating(absl::string_view source, const FieldDescriptor* field,
                         absl::string_view value, google::protobuf::Message* message) {
  double parsed = 0;
  if (!absl::SimpleAtod(value, &parsed)) {
    return BadValue(source, field->name(), value, field->type_name());
  }
  const google::protobuf::Reflection* reflection = message->GetReflection();
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    reflection->SetFloat(message, field, static_cast<float>(parsed));
  } else {
    reflection->SetDouble(message, field, parsed);
  }
  return absl::OkStatus();
}

// Sets scalar `field` from `value` by the field's C++ type.
absl::Status SetScalar(absl::string_view source, const FieldDescriptor* field,
                       absl::string_view value, google::protobuf::Message* message) {
  const google::protobuf::Reflection* r = message->GetReflection();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(message, field, std::string(value));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_ENUM:
      return SetEnum(source, field, value, message);
    case FieldDescriptor::CPPTYPE_INT32:
      return SetInteger<int32_t>(source, field, value,
                                 [&](int32_t v) { r->SetInt32(message, field, v); });
    case FieldDescriptor::CPPTYPE_INT64:
      return SetInteger<int64_t>(source, field, value,
                                 [&](int64_t v) { r->SetInt64(message, field, v); });
    case FieldDescriptor::CPPTYPE_UINT32:
      return SetInteger<uint32_t>(source, field, value,
                                  [&](uint32_t v) { r->SetUInt32(message, field, v); });
    case FieldDescriptor::CPPTYPE_UINT64:
      return SetInteger<uint64_t>(source, field, value,
                                  [&](uint64_t v) { r->SetUInt64(message, field, v); });
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return SetFloating(source, field, value, message);
    case FieldDescriptor::CPPTYPE_BOOL:
      // JSON's spellings only, as a body would give them.
      if (value != "true" && value != "false")
        return BadValue(source, field->name(), value, "bool");
      r->SetBool(message, field, value == "true");
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          source, " \"", field->name(), "\": a message field cannot be set from text"));
  }
}

}  // namespace

absl::StatusOr<QueryParams> ParseQuery(absl::string_view query) {
  QueryParams params;
  for (absl::string_view piece : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const size_t equals = piece.find('=');
    const absl::string_view raw_name = piece.substr(0, equals);
    const absl::string_view raw_value =
        equals == absl::string_view::npos ? absl::string_view() : piece.substr(equals + 1);
    std::string name, value;
    if (!FormDecode(raw_name, &name) || !FormDecode(raw_value, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter \"", raw_name, "\": bad %-escape"));
    }
    params.emplace_back(std::move(name), std::move(value));
  }
  return params;
}

absl::Status SetFieldFromText(absl::string_view source, absl::string_view name,
                              absl::string_view value, google::protobuf::Message* message) {
  const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(std::string(name));
  if (field == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " \"", name, "\": ", message->GetTypeName(), " has no such field"));
  }
  if (field->is_repeated()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " \"", name, "\": a repeated field cannot be set from text"));
  }
  return SetScalar(source, field, value, message);
}

absl::Status ApplyQuery(absl::string_view query, google::protobuf::Message* message) {
  COLLTEST_ASSIGN_OR_RETURN(const QueryParams params, ParseQuery(query));
  std::set<std::string> seen;
  for (const auto& [name, value] : params) {
    // Two values for one scalar: which one was meant is unknowable, so neither is taken.
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter \"", name, "\": given twice"));
    }
    COLLTEST_RETURN_IF_ERROR(SetFieldFromText("query parameter", name, value, message));
  }
  return absl::OkStatus();
}

}  // namespace colltest::http
