// A small HTTP/1.1 client for the gateway's tests: one request per connection (Connection:
// close), over a plain socket or OpenSSL, and a parser of the reply (status line, headers, a body
// by Content-Length, chunked, or to the end of the connection).
#pragma once

#include <openssl/ssl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace colltest::http::testing {

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // de-chunked
  bool chunked = false;

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// The text of a request with Host, Connection: close and (with a body) Content-Length.
std::string RequestText(absl::string_view method, absl::string_view target,
                        const Headers& headers = {}, absl::string_view body = "",
                        bool with_body = false);

// Parses a whole reply as read until the server closed the connection.
absl::StatusOr<HttpResponse> ParseResponse(absl::string_view raw);

// A connected TCP socket to "HOST:PORT" (IPv4), closed on destruction.
class Connection {
 public:
  static absl::StatusOr<Connection> Open(const std::string& address);
  Connection(Connection&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Connection& operator=(Connection&& other) noexcept {
    if (this != &other) {
      Close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Connection();

  // Writes all of `data`; false once the server closed or reset the connection.
  bool Send(absl::string_view data);
  // Reads until the server closes (or `max_bytes`); what was read.
  std::string ReadAll(size_t max_bytes = 64 << 20);
  // Reads until `text` appears in what was read so far (or EOF); everything read.
  std::string ReadUntil(absl::string_view text);
  void Close();
  int local_port() const;
  int fd() const { return fd_; }

 private:
  explicit Connection(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Sends `request` to `address` and reads the reply to the end.
absl::StatusOr<HttpResponse> Exchange(const std::string& address, absl::string_view request,
                                      int* local_port = nullptr);
HttpResponse Get(const std::string& address, absl::string_view target, const Headers& headers = {});
HttpResponse Post(const std::string& address, absl::string_view target, absl::string_view body,
                  const Headers& headers = {});

// TLS client settings: `ca` to verify the server by (empty: no verification), and an optional
// client certificate and key.
struct TlsClient {
  std::string ca;
  std::string cert;
  std::string key;
};

// The same over TLS: the raw reply, or the error of the handshake, write or read.
absl::StatusOr<std::string> TlsExchange(const std::string& address, const TlsClient& client,
                                        absl::string_view request);

}  // namespace colltest::http::testing
