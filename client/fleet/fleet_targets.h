// The nodes of a fleet check (`colltest health --targets` / `--targets-file`) and how they are
// asked (--parallel, --retries, --node-timeout), checked before any node is called so that a typo
// in a list of a thousand nodes is refused naming the entry instead of becoming a row of errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/flags/flags.h"

namespace colltest::client {

// The most nodes one check asks (after DNS names are expanded): a bound on the threads' work
// and on the report, far above one rack, so that a list generated wrong is refused before it
// floods a network.
inline constexpr size_t kMaxFleetTargets = 1024;
inline constexpr uint32_t kDefaultFleetParallel = 32;
inline constexpr uint32_t kMaxFleetParallel = 256;
inline constexpr uint32_t kDefaultFleetRetries = 2;
inline constexpr uint32_t kMaxFleetRetries = 10;

// One node to ask.
struct FleetTarget {
  // As reported: "10.0.0.7:50051", "[fd00::7]:50051", or "NAME/ADDRESS:PORT" for each address a
  // DNS name resolved to ("colltest.ns.svc/10.0.0.7:50051").
  std::string name;
  // What gRPC dials: "ipv4:10.0.0.7:50051" or "ipv6:[fd00::7]:50051", always a resolved address,
  // so that each node is exactly one address and gRPC does not pick one of several.
  std::string address;
  // The DNS name the address came from ("" for an address literal): the name a TLS certificate
  // is checked against when --tls-server-name is not given.
  std::string host_name;
};

// getaddrinfo in production; tests substitute their own. Returns the numeric addresses of `host`
// (IPv4 dotted quads, IPv6 without brackets), or an error saying why it did not resolve.
using HostResolver = std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)>;
absl::StatusOr<std::vector<std::string>> ResolveWithGetaddrinfo(const std::string& host);

// The entries of a --targets-file: one per line; blank lines and everything from a '#' on are
// ignored. Each entry is paired with its line number for error messages.
struct TargetEntry {
  std::string text;
  std::string where;  // "--targets entry 3" or "--targets-file line 7"
};
std::vector<TargetEntry> SplitTargetsFlag(absl::string_view list);
std::vector<TargetEntry> SplitTargetsFile(absl::string_view contents);

// Every entry is HOST:PORT, [IPV6]:PORT or NAME:PORT (PORT 1..65535); a NAME is resolved and each
// of its addresses becomes a node. Refused, naming the entry: a malformed entry, an empty list,
// the same address and port twice (also when reached through different names), more than
// kMaxFleetTargets nodes, and a name that does not resolve.
absl::StatusOr<std::vector<FleetTarget>> ResolveFleetTargets(
    const std::vector<TargetEntry>& entries, const HostResolver& resolve);

struct FleetOptions {
  std::vector<FleetTarget> targets;
  uint32_t parallel = kDefaultFleetParallel;  // nodes asked at once
  uint32_t retries = kDefaultFleetRetries;    // extra attempts for an unreachable node
  absl::Duration node_timeout;                // per node and attempt
};

// True when --targets or --targets-file asks for a fleet check.
bool IsFleetCheck(const HealthFlags& flags);

// The fleet flags checked and the targets resolved. `health_deadline` (HealthDeadline of the
// request) is the default --node-timeout. Refused: --targets with --targets-file, --parallel
// outside 1..256, --retries outside 0..10, a --node-timeout of 0, an unreadable file.
absl::StatusOr<FleetOptions> BuildFleetOptions(const HealthFlags& flags,
                                               absl::Duration health_deadline,
                                               const HostResolver& resolve);

// --parallel, --node-timeout and --retries only mean something to a fleet check; given without
// --targets they would be silently ignored, so they are refused naming the flag.
absl::Status CheckNoFleetOnlyFlags(const HealthFlags& flags);

}  // namespace colltest::client
