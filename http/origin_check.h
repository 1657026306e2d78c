// What keeps other web pages out of the HTTP port (docs/security.md, "Browsers"). A page on any
// site can make the browser send a "simple" cross-site POST (a form, or fetch with text/plain) and
// the browser adds no token of its own; with authentication off every caller is an admin, so such
// a POST could start or cancel runs. And through DNS rebinding a page's own name can come to point
// at 127.0.0.1, making the port same-origin to it. So, as Jupyter and Prometheus do:
//   - a POST must say Content-Type: application/json (415), which no simple request can;
//   - an Origin header, when present, must be the port's own origin (scheme://Host) or an allowed
//     host (403);
//   - with authentication off, the Host header must name this port: localhost, 127.0.0.0/8, [::1]
//     or the --http host, with the bound port, or an allowed host (403).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace colltest::http {

struct BrowserPolicy {
  bool check_host = false;  // authentication off: DNS rebinding could reach an admin port
  std::string listen_host;  // of --http; 0.0.0.0 and [::] (any address) name no host
  bool tls = false;         // https
  // --http-allowed-host: "name" (any port) or "name:port", compared without case.
  std::vector<std::string> allowed_hosts;
};

// `host`: the Host header (null: none); `server_port`: the port the request came in on.
// PERMISSION_DENIED (403) naming the header.
absl::Status CheckHost(const char* host, int server_port, const BrowserPolicy& policy);

// `origin`, `host`: the headers (null: none). No Origin passes (not a browser, or a same-origin
// GET). PERMISSION_DENIED (403) naming the header.
absl::Status CheckOrigin(const char* origin, const char* host, const BrowserPolicy& policy);

// `content_type`: the header of a POST (null: none). INVALID_ARGUMENT answered 415.
absl::Status CheckJsonContentType(const char* content_type);

}  // namespace colltest::http
