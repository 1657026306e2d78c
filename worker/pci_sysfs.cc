#include "worker/pci_sysfs.h"

#include <dirent.h>

#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace colltest::worker {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

// Hex digits only: no sign, prefix or spaces, which absl::SimpleHexAtoi would let through.
bool ParseHex(absl::string_view s, size_t max_digits, uint32_t* out) {
  if (s.empty() || s.size() > max_digits) return false;
  for (const char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleHexAtoi(s, out);
}

// The names in `dir` that start with `prefix`.
std::vector<std::string> EntriesStartingWith(const std::string& dir, absl::string_view prefix) {
  std::vector<std::string> names;
  std::unique_ptr<DIR, DirCloser> d(opendir(dir.c_str()));
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d.get())) {
    if (absl::StartsWith(e->d_name, prefix)) names.emplace_back(e->d_name);
  }
  return names;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return std::string(absl::StripAsciiWhitespace(line));
}

}  // namespace

std::optional<PciAddress> ParsePciBusId(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() == 2) parts.insert(parts.begin(), "0");
  if (parts.size() != 3) return std::nullopt;
  std::vector<absl::string_view> slot = absl::StrSplit(parts[2], '.');
  PciAddress a;
  if (slot.size() != 2 || !ParseHex(parts[0], 8, &a.domain) || !ParseHex(parts[1], 2, &a.bus) ||
      !ParseHex(slot[0], 2, &a.device) || !ParseHex(slot[1], 1, &a.function) || a.device > 31 ||
      a.function > 7) {
    return std::nullopt;
  }
  return a;
}

std::string PciDeviceDir(absl::string_view pci_bus_id, const std::string& sysfs) {
  const std::optional<PciAddress> a = ParsePciBusId(pci_bus_id);
  if (!a) return "";
  return absl::StrFormat("%s/bus/pci/devices/%04x:%02x:%02x.%x", sysfs, a->domain, a->bus,
                         a->device, a->function);
}

std::string RenderNode(absl::string_view pci_bus_id, const std::string& sysfs) {
  const std::string dir = PciDeviceDir(pci_bus_id, sysfs);
  if (dir.empty()) return "";
  for (const std::string& name : EntriesStartingWith(dir + "/drm", "renderD")) {
    return "/dev/dri/" + name;  // a GPU has one render node
  }
  return "";
}

std::string PciSerialNumber(absl::string_view pci_bus_id, const std::string& sysfs) {
  const std::string dir = PciDeviceDir(pci_bus_id, sysfs);
  if (dir.empty()) return "";
  std::vector<std::string> candidates = {dir + "/serial_number"};
  for (const std::string& card : EntriesStartingWith(dir + "/drm", "card")) {
    candidates.push_back(dir + "/drm/" + card + "/device/serial_number");
  }
  for (const std::string& path : candidates) {
    std::string serial = FirstLine(path);
    if (!serial.empty()) return serial;
  }
  return "";
}

}  // namespace colltest::worker
