#include "client/format/junit_xml.h"

#include <unistd.h>

#include <climits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

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

// gethostname, or "localhost" when it fails: the attribute is required by the schema.
std::string LocalHostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

std::string JunitTimestamp(int64_t unix_ms) {
  const absl::Time when = unix_ms > 0 ? absl::FromUnixMillis(unix_ms) : absl::Now();
  return absl::FormatTime("%Y-%m-%dT%H:%M:%S", when, absl::UTCTimeZone());
}

SuiteOrigin MachineOrigin(const v1::MachineIdentity& machine, int64_t unix_ms) {
  return {unix_ms, machine.hostname()};
}

std::string OutcomeXml(Outcome outcome, absl::string_view type, absl::string_view message,
                       absl::string_view details) {
  const absl::string_view element = outcome == Outcome::kError ? "error" : "failure";
  return absl::StrCat("    <", element, " type=\"", XmlAttr(type), "\" message=\"",
                      XmlAttr(message), "\">", XmlText(details), "</", element, ">\n");
}

std::string XmlAttr(absl::string_view text) { return Escape(text, /*attribute=*/true); }
std::string XmlText(absl::string_view text) { return Escape(text, /*attribute=*/false); }

std::string SuiteXml(absl::string_view name, const SuiteCounts& counts, const SuiteOrigin& origin,
                     const Properties& properties, absl::string_view testcases) {
  const std::string hostname = origin.hostname.empty() ? LocalHostname() : origin.hostname;
  std::string out = absl::StrFormat(
      "<testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" "
      "time=\"%.3f\" timestamp=\"%s\" hostname=\"%s\">\n",
      XmlAttr(name), counts.tests, counts.failures, counts.errors, counts.skipped, counts.seconds,
      JunitTimestamp(origin.unix_ms), XmlAttr(hostname));
  absl::StrAppend(&out, "  <properties>\n");
  for (const auto& [property, value] : properties) {
    absl::StrAppend(&out, "    <property name=\"", XmlAttr(property), "\" value=\"", XmlAttr(value),
                    "\"/>\n");
  }
  absl::StrAppend(&out, "  </properties>\n", testcases, "</testsuite>\n");
  return out;
}

Properties MachineProperties(const v1::MachineIdentity& machine, absl::string_view name_prefix) {
  Properties properties;
  if (machine.key().empty() && machine.hostname().empty() && machine.devices().empty()) {
    return properties;
  }
  properties.emplace_back(absl::StrCat(name_prefix, "hostname"), machine.hostname());
  properties.emplace_back(absl::StrCat(name_prefix, "machine_key"), machine.key());
  properties.emplace_back(absl::StrCat(name_prefix, "driver"), machine.driver_version());
  for (const v1::Device& d : machine.devices()) {
    const std::string prefix = absl::StrCat(name_prefix, "device.", d.index(), ".");
    properties.emplace_back(absl::StrCat(prefix, "name"), d.name());
    properties.emplace_back(absl::StrCat(prefix, "uuid"), d.uuid());
    properties.emplace_back(absl::StrCat(prefix, "pci_bus_id"), d.pci_bus_id());
    if (!d.serial().empty()) properties.emplace_back(absl::StrCat(prefix, "serial"), d.serial());
  }
  return properties;
}

}  // namespace colltest::client
