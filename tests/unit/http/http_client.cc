#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace colltest::http::testing {
namespace {

absl::StatusOr<sockaddr_in> ParseAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("bad address ", address));
  }
  sa.sin_port = htons(static_cast<uint16_t>(port));
  return sa;
}

// Decodes a chunked body; false when it is malformed or cut short.
bool Dechunk(absl::string_view raw, std::string* body) {
  body->clear();
  while (true) {
    const size_t eol = raw.find("\r\n");
    if (eol == absl::string_view::npos) return false;
    size_t size = 0;
    if (!absl::SimpleHexAtoi(raw.substr(0, eol), &size)) return false;
    raw.remove_prefix(eol + 2);
    if (size == 0) return true;
    if (raw.size() < size + 2 || raw.substr(size, 2) != "\r\n") return false;
    body->append(raw.data(), size);
    raw.remove_prefix(size + 2);
  }
}

}  // namespace

std::string RequestText(absl::string_view method, absl::string_view target, const Headers& headers,
                        absl::string_view body, bool with_body) {
  std::string text = absl::StrCat(method, " ", target, " HTTP/1.1\r\nHost: localhost\r\n");
  bool typed = false;
  for (const auto& [name, value] : headers) {
    absl::StrAppend(&text, name, ": ", value, "\r\n");
    typed = typed || absl::EqualsIgnoreCase(name, "Content-Type");
  }
  // The API takes a POST only as JSON (origin_check.h); a test that means another type says so.
  if (method == "POST" && !typed) absl::StrAppend(&text, "Content-Type: application/json\r\n");
  if (with_body || !body.empty()) absl::StrAppend(&text, "Content-Length: ", body.size(), "\r\n");
  absl::StrAppend(&text, "Connection: close\r\n\r\n", body);
  return text;
}

absl::StatusOr<HttpResponse> ParseResponse(absl::string_view raw) {
  const size_t end = raw.find("\r\n\r\n");
  if (end == absl::string_view::npos) {
    return absl::DataLossError(absl::StrCat("no header end in: ", raw.substr(0, 200)));
  }
  std::vector<absl::string_view> lines = absl::StrSplit(raw.substr(0, end), "\r\n");
  HttpResponse response;
  const std::vector<absl::string_view> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() < 2 || !absl::StartsWith(status_line[0], "HTTP/1.") ||
      !absl::SimpleAtoi(status_line[1], &response.status)) {
    return absl::DataLossError(absl::StrCat("bad status line: ", lines[0]));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) return absl::DataLossError("bad header line");
    response.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  const absl::string_view body = raw.substr(end + 4);
  response.chunked = absl::EqualsIgnoreCase(response.Header("transfer-encoding"), "chunked");
  if (response.chunked) {
    if (!Dechunk(body, &response.body)) return absl::DataLossError("bad chunked body");
  } else {
    response.body = std::string(body);
  }
  return response;
}

absl::StatusOr<Connection> Connection::Open(const std::string& address) {
  absl::StatusOr<sockaddr_in> sa = ParseAddress(address);
  if (!sa.ok()) return sa.status();
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket");
  Connection connection(fd);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&*sa), sizeof(*sa)) != 0) {
    return absl::UnavailableError(absl::StrCat("connect ", address));
  }
  timeval timeout{20, 0};  // a hung gateway fails the test instead of hanging it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return connection;
}

Connection::~Connection() { Close(); }

void Connection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool Connection::Send(absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Connection::ReadAll(size_t max_bytes) {
  std::string out;
  char buffer[65536];
  while (out.size() < max_bytes) {
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

std::string Connection::ReadUntil(absl::string_view text) {
  std::string out;
  char c;
  while (!absl::StrContains(out, text) && recv(fd_, &c, 1, 0) == 1) out += c;
  return out;
}

int Connection::local_port() const {
  sockaddr_in sa{};
  socklen_t size = sizeof(sa);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &size);
  return ntohs(sa.sin_port);
}

absl::StatusOr<HttpResponse> Exchange(const std::string& address, absl::string_view request,
                                      int* local_port) {
  absl::StatusOr<Connection> connection = Connection::Open(address);
  if (!connection.ok()) return connection.status();
  if (local_port != nullptr) *local_port = connection->local_port();
  // A server may answer (413) before it read everything; the reply is still there to read.
  connection->Send(request);
  return ParseResponse(connection->ReadAll());
}

HttpResponse Get(const std::string& address, absl::string_view target, const Headers& headers) {
  absl::StatusOr<HttpResponse> response = Exchange(address, RequestText("GET", target, headers));
  return response.ok() ? *response : HttpResponse{};
}

HttpResponse Post(const std::string& address, absl::string_view target, absl::string_view body,
                  const Headers& headers) {
  absl::StatusOr<HttpResponse> response =
      Exchange(address, RequestText("POST", target, headers, body, /*with_body=*/true));
  return response.ok() ? *response : HttpResponse{};
}

absl::StatusOr<std::string> TlsExchange(const std::string& address, const TlsClient& client,
                                        absl::string_view request) {
  absl::StatusOr<Connection> connection = Connection::Open(address);
  if (!connection.ok()) return connection.status();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        &SSL_CTX_free);
  if (!client.ca.empty()) {
    SSL_CTX_load_verify_locations(ctx.get(), client.ca.c_str(), nullptr);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (!client.cert.empty() &&
      (SSL_CTX_use_certificate_chain_file(ctx.get(), client.cert.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx.get(), client.key.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return absl::InvalidArgumentError("client certificate");
  }
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), &SSL_free);
  SSL_set_fd(ssl.get(), connection->fd());
  SSL_set_tlsext_host_name(ssl.get(), "localhost");
  if (SSL_connect(ssl.get()) != 1) {
    ERR_clear_error();
    return absl::UnavailableError("TLS handshake failed");
  }
  if (SSL_write(ssl.get(), request.data(), static_cast<int>(request.size())) <= 0) {
    ERR_clear_error();
    return absl::UnavailableError("TLS write failed");
  }
  std::string reply;
  char buffer[16384];
  int n = 0;
  while ((n = SSL_read(ssl.get(), buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
  ERR_clear_error();
  if (reply.empty()) return absl::UnavailableError("TLS: no reply");
  return reply;
}

}  // namespace colltest::http::testing
