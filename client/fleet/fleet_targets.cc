#include "client/fleet/fleet_targets.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/parse.h"
#include "common/status_macros.h"
#include "common/text.h"

namespace colltest::client {
namespace {

// A file of a thousand nodes with comments is a few tens of KiB; the bound only keeps a wrong
// path (a device, a log) from being read whole.
constexpr size_t kMaxTargetsFileBytes = 4 << 20;
constexpr size_t kMaxHostNameBytes = 253;  // RFC 1035
constexpr size_t kMaxLabelBytes = 63;

// One address in binary and in canonical text, so that "127.0.0.01"-style spellings cannot hide
// a duplicate and the report sorts numerically.
struct Address {
  int family = AF_UNSPEC;
  std::array<unsigned char, 16> bytes{};
  std::string text;  // inet_ntop's spelling, no brackets

  bool operator<(const Address& o) const {
    return std::tie(family, bytes) < std::tie(o.family, o.bytes);
  }
};

std::optional<Address> ParseAddress(const std::string& text, int family) {
  Address a;
  a.family = family;
  if (inet_pton(family, text.c_str(), a.bytes.data()) != 1) return std::nullopt;
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(family, a.bytes.data(), buf, sizeof buf) == nullptr) return std::nullopt;
  a.text = buf;
  return a;
}

// What an entry says before any lookup.
struct Entry {
  std::string host;  // without brackets
  uint16_t port = 0;
  std::optional<Address> literal;  // set for an IPv4 or IPv6 address literal
};

absl::Status Malformed(const TargetEntry& e, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(e.where, " '", common::EscapeForTerminal(e.text), "': ", why,
                   " (expected HOST:PORT, [IPV6]:PORT or NAME:PORT)"));
}

absl::StatusOr<uint16_t> ParsePort(const TargetEntry& e, absl::string_view text) {
  uint32_t port = 0;
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
  if (!digits || !absl::SimpleAtoi(text, &port) || port == 0 || port > 65535) {
    return Malformed(
        e, text.empty() ? "missing port" : absl::StrCat("invalid port '", text, "' (1..65535)"));
  }
  return static_cast<uint16_t>(port);
}

// A DNS name as resolvers accept it: labels of letters, digits, '-' and '_', dot-separated.
bool IsHostName(absl::string_view host) {
  if (host.empty() || host.size() > kMaxHostNameBytes) return false;
  if (absl::EndsWith(host, ".")) host.remove_suffix(1);  // a fully qualified "name."
  for (absl::string_view label : absl::StrSplit(host, '.')) {
    if (label.empty() || label.size() > kMaxLabelBytes || label.front() == '-') return false;
    for (char ch : label) {
      if (!absl::ascii_isalnum(ch) && ch != '-' && ch != '_') return false;
    }
  }
  return true;
}

absl::StatusOr<Entry> ParseEntry(const TargetEntry& e) {
  const absl::string_view text = e.text;
  Entry entry;
  absl::string_view port;
  if (text.empty()) return Malformed(e, "empty entry");
  if (absl::StrContains(text, "://")) return Malformed(e, "a URL: give it without the scheme");
  if (absl::StartsWith(text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) return Malformed(e, "'[' without ']'");
    entry.host = std::string(text.substr(1, close - 1));
    const absl::string_view rest = text.substr(close + 1);
    if (!absl::StartsWith(rest, ":")) return Malformed(e, "missing :PORT after ']'");
    port = rest.substr(1);
    entry.literal = ParseAddress(entry.host, AF_INET6);
    if (!entry.literal)
      return Malformed(e, absl::StrCat("'", entry.host, "' is not an IPv6 address"));
  } else {
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) return Malformed(e, "missing :PORT");
    entry.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (entry.host.find(':') != std::string::npos) {
      return Malformed(e, "an IPv6 address needs brackets, as in [::1]:50051");
    }
    if (entry.host.empty()) return Malformed(e, "missing host");
    entry.literal = ParseAddress(entry.host, AF_INET);
    // "10.1.2" is an address to inet_aton and so to getaddrinfo, never the name it looks like.
    const bool numeric = std::all_of(entry.host.begin(), entry.host.end(),
                                     [](char ch) { return absl::ascii_isdigit(ch) || ch == '.'; });
    if (!entry.literal && numeric) {
      return Malformed(e, absl::StrCat("'", entry.host, "' is not an IPv4 address"));
    }
    if (!entry.literal && !IsHostName(entry.host)) {
      return Malformed(e, absl::StrCat("'", common::EscapeForTerminal(entry.host),
                                       "' is neither an address nor a host name"));
    }
  }
  COLLTEST_ASSIGN_OR_RETURN(entry.port, ParsePort(e, port));
  return entry;
}

// The entry's addresses: the literal itself, or every address its name resolves to, sorted and
// without repeats (a resolver may list one address twice; that is not the user's duplicate).
absl::StatusOr<std::vector<Address>> EntryAddresses(const TargetEntry& e, const Entry& entry,
                                                    const HostResolver& resolve) {
  if (entry.literal) return std::vector<Address>{*entry.literal};
  absl::StatusOr<std::vector<std::string>> resolved = resolve(entry.host);
  if (!resolved.ok()) {
    return absl::Status(resolved.status().code(),
                        absl::StrCat(e.where, " '", e.text, "': ", resolved.status().message()));
  }
  std::vector<Address> addresses;
  for (const std::string& text : *resolved) {
    std::optional<Address> a = ParseAddress(text, AF_INET);
    if (!a) a = ParseAddress(text, AF_INET6);
    if (!a) {
      return absl::InternalError(
          absl::StrCat(e.where, " '", e.text, "': the resolver gave '", text, "'"));
    }
    addresses.push_back(*std::move(a));
  }
  if (addresses.empty()) {
    return absl::NotFoundError(
        absl::StrCat(e.where, " '", e.text, "': ", entry.host, " resolves to no address"));
  }
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end(),
                              [](const Address& a, const Address& b) { return a.text == b.text; }),
                  addresses.end());
  return addresses;
}

FleetTarget MakeTarget(const Entry& entry, const Address& a) {
  const bool v6 = a.family == AF_INET6;
  const std::string host_port = absl::StrCat(v6 ? "[" : "", a.text, v6 ? "]" : "", ":", entry.port);
  FleetTarget t;
  t.address = absl::StrCat(v6 ? "ipv6:" : "ipv4:", host_port);
  if (entry.literal) {
    t.name = host_port;
  } else {
    t.name = absl::StrCat(entry.host, "/", host_port);
    t.host_name = entry.host;
  }
  return t;
}

absl::StatusOr<std::string> ReadTargetsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--targets-file: cannot read '", path, "': ", std::strerror(errno)));
  }
  std::string contents(kMaxTargetsFileBytes + 1, '\0');
  in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("--targets-file: cannot read '", path, "'"));
  }
  contents.resize(static_cast<size_t>(in.gcount()));
  if (contents.size() > kMaxTargetsFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--targets-file: '", path, "' is over ", kMaxTargetsFileBytes >> 20, " MiB"));
  }
  return contents;
}

absl::StatusOr<uint32_t> ParseBounded(absl::string_view flag,
                                      const std::optional<std::string>& text, uint32_t fallback,
                                      uint32_t min, uint32_t max) {
  if (!text.has_value()) return fallback;
  COLLTEST_ASSIGN_OR_RETURN(const uint64_t value, common::ParseCount(flag, *text));
  if (value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": must be ", min, "..", max, ", got ", value));
  }
  return static_cast<uint32_t>(value);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ResolveWithGetaddrinfo(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address rather than one per socket type
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    return absl::NotFoundError(absl::StrCat(host, " does not resolve: ", gai_strerror(rc)));
  }
  std::vector<std::string> out;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN];
    const void* bytes = nullptr;
    if (a->ai_family == AF_INET) {
      bytes = &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
    } else if (a->ai_family == AF_INET6) {
      bytes = &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
    }
    if (bytes != nullptr && inet_ntop(a->ai_family, bytes, buf, sizeof buf) != nullptr) {
      out.emplace_back(buf);
    }
  }
  freeaddrinfo(list);
  return out;
}

std::vector<TargetEntry> SplitTargetsFlag(absl::string_view list) {
  std::vector<TargetEntry> entries;
  int index = 0;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    ++index;
    entries.push_back(
        {std::string(absl::StripAsciiWhitespace(part)), absl::StrCat("--targets entry ", index)});
  }
  // "--targets ''" is one empty entry: reported as the empty list it is.
  if (entries.size() == 1 && entries[0].text.empty()) entries.clear();
  return entries;
}

std::vector<TargetEntry> SplitTargetsFile(absl::string_view contents) {
  std::vector<TargetEntry> entries;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    entries.push_back({std::string(line), absl::StrCat("--targets-file line ", line_number)});
  }
  return entries;
}

absl::StatusOr<std::vector<FleetTarget>> ResolveFleetTargets(
    const std::vector<TargetEntry>& entries, const HostResolver& resolve) {
  if (entries.empty()) {
    return absl::InvalidArgumentError("the target list is empty: no node to ask");
  }
  std::vector<FleetTarget> targets;
  std::map<std::string, std::string> seen;  // address -> the entry that named it first
  for (const TargetEntry& e : entries) {
    COLLTEST_ASSIGN_OR_RETURN(const Entry entry, ParseEntry(e));
    COLLTEST_ASSIGN_OR_RETURN(const std::vector<Address> addresses,
                              EntryAddresses(e, entry, resolve));
    for (const Address& a : addresses) {
      FleetTarget target = MakeTarget(entry, a);
      const auto [it, fresh] = seen.emplace(target.address, e.where);
      if (!fresh) {
        return absl::InvalidArgumentError(
            absl::StrCat(e.where, " '", e.text, "': ", target.address.substr(5),
                         " is already a node (", it->second, "): each node is asked once"));
      }
      if (targets.size() == kMaxFleetTargets) {
        return absl::InvalidArgumentError(
            absl::StrCat(e.where, " '", e.text, "': more than ", kMaxFleetTargets,
                         " nodes, the most one check asks: split the list"));
      }
      targets.push_back(std::move(target));
    }
  }
  return targets;
}

bool IsFleetCheck(const HealthFlags& flags) {
  return flags.targets.has_value() || flags.targets_file.has_value();
}

absl::Status CheckNoFleetOnlyFlags(const HealthFlags& flags) {
  for (const auto& [flag, value] :
       {std::pair{"--parallel", &flags.parallel}, std::pair{"--node-timeout", &flags.node_timeout},
        std::pair{"--retries", &flags.retries}}) {
    if (value->has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": only for a fleet check (--targets or --targets-file), not with --server"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<FleetOptions> BuildFleetOptions(const HealthFlags& flags,
                                               absl::Duration health_deadline,
                                               const HostResolver& resolve) {
  if (flags.targets.has_value() && flags.targets_file.has_value()) {
    return absl::InvalidArgumentError("--targets and --targets-file: give one list, not both");
  }
  FleetOptions options;
  COLLTEST_ASSIGN_OR_RETURN(
      options.parallel,
      ParseBounded("--parallel", flags.parallel, kDefaultFleetParallel, 1, kMaxFleetParallel));
  COLLTEST_ASSIGN_OR_RETURN(
      options.retries,
      ParseBounded("--retries", flags.retries, kDefaultFleetRetries, 0, kMaxFleetRetries));
  options.node_timeout = health_deadline;
  if (flags.node_timeout.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(options.node_timeout,
                              common::ParseDuration("--node-timeout", *flags.node_timeout));
    if (options.node_timeout <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError("--node-timeout: must be more than 0");
    }
  }
  std::vector<TargetEntry> entries;
  if (flags.targets.has_value()) {
    entries = SplitTargetsFlag(*flags.targets);
  } else {
    COLLTEST_ASSIGN_OR_RETURN(const std::string contents, ReadTargetsFile(*flags.targets_file));
    entries = SplitTargetsFile(contents);
  }
  absl::StatusOr<std::vector<FleetTarget>> targets = ResolveFleetTargets(entries, resolve);
  if (!targets.ok()) {
    // Only the empty list's message lacks the flag's name; the others start with the entry.
    if (entries.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flags.targets.has_value() ? "--targets" : "--targets-file",
                       ": the list is empty: no node to ask"));
    }
    return targets.status();
  }
  options.targets = *std::move(targets);
  return options;
}

}  // namespace colltest::client
