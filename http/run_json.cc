#include "http/run_json.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "http/json_codec.h"

namespace colltest::http {
namespace {

namespace v1 = ::colltest::v1;

// The empty `cases` list as the printer writes it in the run's JSON (every field is printed, in
// field-number order). Inside a string every quote is escaped, so this can only be the key.
constexpr absl::string_view kEmptyCases = "\"cases\":[]";

// Gathers pieces and passes them on in blocks of about kRunJsonPieceBytes.
class PieceBuffer {
 public:
  explicit PieceBuffer(JsonSink sink) : sink_(sink) { buffer_.reserve(kRunJsonPieceBytes); }

  bool Append(absl::string_view piece) {
    buffer_.append(piece.data(), piece.size());
    return buffer_.size() < kRunJsonPieceBytes || Flush();
  }

  bool Flush() {
    if (buffer_.empty()) return true;
    const bool taken = sink_(buffer_);
    buffer_.clear();
    return taken;
  }

 private:
  JsonSink sink_;
  std::string buffer_;
};

}  // namespace

bool WriteRunJson(v1::RunResult run, JsonSink sink) {
  google::protobuf::RepeatedPtrField<v1::CaseResult> cases;
  cases.Swap(run.mutable_cases());
  const std::string outline_text = ToJson(run);
  const absl::string_view outline = outline_text;
  const size_t at = outline.find(kEmptyCases);
  if (at == outline.npos || outline.find(kEmptyCases, at + 1) != outline.npos) {
    // Not the printer's usual shape: the whole document at once rather than a wrong one.
    cases.Swap(run.mutable_cases());
    return sink(ToJson(run));
  }
  const size_t list_open = at + kEmptyCases.size() - 1;  // just after '['
  PieceBuffer out(sink);
  if (!out.Append(outline.substr(0, list_open))) return false;
  // Released from the back, so reversed first: each case is freed right after its JSON is made.
  std::reverse(cases.pointer_begin(), cases.pointer_end());
  for (bool first = true; !cases.empty(); first = false) {
    const std::unique_ptr<v1::CaseResult> one(cases.ReleaseLast());
    if (!first && !out.Append(",")) return false;
    if (!out.Append(ToJson(*one))) return false;
  }
  return out.Append(outline.substr(list_open)) && out.Flush();
}

bool WriteSummaryEventJson(v1::SweepEvent event, JsonSink sink) {
  v1::RunResult run;
  run.Swap(event.mutable_summary());  // the event keeps an empty summary in its place
  const std::string outline_text = ToJson(event);
  const absl::string_view outline = outline_text;
  // The summary is the event's last member: the outline ends with the empty run and the '}'.
  const std::string empty_end = ToJson(v1::RunResult()) + "}";
  if (!absl::EndsWith(outline, empty_end)) {
    run.Swap(event.mutable_summary());
    return sink(ToJson(event));
  }
  return sink(outline.substr(0, outline.size() - empty_end.size())) &&
         WriteRunJson(std::move(run), sink) && sink("}");
}

}  // namespace colltest::http
