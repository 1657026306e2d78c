#include "http/origin_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

// A host as a Host header or an origin writes it: a lower-case name, and the port when given.
struct HostPort {
  std::string name;  // "localhost", "127.0.0.1", "[::1]"
  std::optional<int> port;
};

std::optional<HostPort> ParseHostPort(absl::string_view text) {
  HostPort parsed;
  absl::string_view rest = text;
  size_t name_end = 0;
  if (absl::StartsWith(rest, "[")) {
    name_end = rest.find(']');
    if (name_end == absl::string_view::npos) return std::nullopt;
    ++name_end;
  } else {
    name_end = rest.find(':');
    if (name_end == absl::string_view::npos) name_end = rest.size();
  }
  parsed.name = absl::AsciiStrToLower(rest.substr(0, name_end));
  rest.remove_prefix(name_end);
  if (parsed.name.empty()) return std::nullopt;
  if (absl::ConsumePrefix(&rest, ":")) {
    int port = 0;
    if (!absl::SimpleAtoi(rest, &port) || port < 1 || port > 65535) return std::nullopt;
    parsed.port = port;
  } else if (!rest.empty()) {
    return std::nullopt;
  }
  return parsed;
}

bool IsLoopbackName(absl::string_view name) {
  if (name == "localhost" || name == "[::1]") return true;
  in_addr v4{};
  return inet_pton(AF_INET, std::string(name).c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

bool IsAnyAddress(absl::string_view name) { return name == "0.0.0.0" || name == "[::]"; }

// Whether an --http-allowed-host entry ("name" or "name:port") admits `host`.
bool Allowed(const HostPort& host, int default_port, const BrowserPolicy& policy) {
  for (const std::string& entry : policy.allowed_hosts) {
    const std::optional<HostPort> allowed = ParseHostPort(entry);
    if (!allowed || allowed->name != host.name) continue;
    if (!allowed->port || *allowed->port == host.port.value_or(default_port)) return true;
  }
  return false;
}

int DefaultPort(bool tls) { return tls ? 443 : 80; }

std::string NamesAccepted(int server_port, const BrowserPolicy& policy) {
  std::vector<std::string> names = {"localhost", "127.0.0.1", "[::1]"};
  if (!policy.listen_host.empty() && !IsAnyAddress(policy.listen_host) &&
      !IsLoopbackName(policy.listen_host)) {
    names.push_back(policy.listen_host);
  }
  return absl::StrCat(absl::StrJoin(names, ", "), " on port ", server_port,
                      policy.allowed_hosts.empty()
                          ? ""
                          : absl::StrCat(", or ", absl::StrJoin(policy.allowed_hosts, ", ")));
}

absl::Status Forbidden(absl::string_view message) { return absl::PermissionDeniedError(message); }

}  // namespace

absl::Status CheckHost(const char* host, int server_port, const BrowserPolicy& policy) {
  if (!policy.check_host) return absl::OkStatus();
  const std::string accepted = NamesAccepted(server_port, policy);
  if (host == nullptr) {
    return Forbidden(absl::StrCat("Host header missing; with authentication off it must name ",
                                  accepted, " (--http-allowed-host adds names)"));
  }
  const std::optional<HostPort> parsed = ParseHostPort(host);
  if (parsed) {
    const int port = parsed->port.value_or(DefaultPort(policy.tls));
    const bool ours =
        IsLoopbackName(parsed->name) || (!IsAnyAddress(policy.listen_host) &&
                                         parsed->name == absl::AsciiStrToLower(policy.listen_host));
    if (ours && port == server_port) return absl::OkStatus();
    if (Allowed(*parsed, DefaultPort(policy.tls), policy)) return absl::OkStatus();
  }
  return Forbidden(absl::StrCat("Host header \"", host,
                                "\" does not name this server; with authentication off it must "
                                "name ",
                                accepted, " (--http-allowed-host adds names)"));
}

absl::Status CheckOrigin(const char* origin, const char* host, const BrowserPolicy& policy) {
  if (origin == nullptr) return absl::OkStatus();
  const absl::string_view scheme = policy.tls ? "https" : "http";
  absl::string_view rest = origin;
  std::optional<HostPort> from;
  absl::string_view origin_scheme;
  if (const size_t sep = rest.find("://"); sep != absl::string_view::npos) {
    origin_scheme = rest.substr(0, sep);
    from = ParseHostPort(rest.substr(sep + 3));
  }
  if (from) {
    const int origin_port = from->port.value_or(origin_scheme == "https" ? 443 : 80);
    const std::optional<HostPort> self =
        host != nullptr ? ParseHostPort(host) : std::optional<HostPort>();
    if (self && absl::EqualsIgnoreCase(origin_scheme, scheme) && self->name == from->name &&
        self->port.value_or(DefaultPort(policy.tls)) == origin_port) {
      return absl::OkStatus();
    }
    if (Allowed(*from, origin_port, policy)) return absl::OkStatus();
  }
  return Forbidden(absl::StrCat("Origin header \"", origin, "\" is not this server's origin (",
                                scheme, "://", host != nullptr ? host : "HOST",
                                ") nor a --http-allowed-host: requests from other web pages are "
                                "refused"));
}

absl::Status CheckJsonContentType(const char* content_type) {
  const absl::string_view media =
      content_type == nullptr
          ? absl::string_view()
          : absl::StripAsciiWhitespace(absl::string_view(content_type)
                                           .substr(0, absl::string_view(content_type).find(';')));
  if (absl::EqualsIgnoreCase(media, "application/json")) return absl::OkStatus();
  return WithHttpStatus(
      absl::InvalidArgumentError(absl::StrCat(
          "Content-Type header ",
          content_type == nullptr ? "missing" : absl::StrCat("\"", content_type, "\""),
          ": a POST must be sent as application/json (a web page cannot send that type to "
          "another site without its consent)")),
      415);
}

}  // namespace colltest::http
