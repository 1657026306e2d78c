#include "client/junit_xml.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace colltest::client {
namespace {

// Escapes for text and attribute values. Control characters other than tab, newline and carriage
// return are not allowed anywhere in XML 1.0, even escaped, so they are dropped to keep the file
// parseable. In an attribute, a raw newline would be normalised to a space, hence the references.
std::string Escape(absl::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
        break;
    }
  }
  return out;
}

}  // namespace

std::string XmlAttr(absl::string_view text) { return Escape(text, /*attribute=*/true); }
std::string XmlText(absl::string_view text) { return Escape(text, /*attribute=*/false); }

std::string SuiteXml(absl::string_view name, const SuiteCounts& counts,
                     const Properties& properties, absl::string_view testcases) {
  std::string out = absl::StrFormat(
      "<testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
      "time=\"%.3f\">\n",
      XmlAttr(name), counts.tests, counts.failures, counts.skipped, counts.seconds);
  absl::StrAppend(&out, "  <properties>\n");
  for (const auto& [property, value] : properties) {
    absl::StrAppend(&out, "    <property name=\"", property, "\" value=\"", XmlAttr(value),
                    "\"/>\n");
  }
  absl::StrAppend(&out, "  </properties>\n", testcases, "</testsuite>\n");
  return out;
}

}  // namespace colltest::client
