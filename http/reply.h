// Writing replies on a CivetWeb connection: whole replies with a Content-Length, the JSON error
// body, and a newline-delimited JSON stream. Every reply carries X-Content-Type-Options: nosniff
// so that a browser never guesses a type other than the one sent.
#pragma once

#include <initializer_list>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

struct mg_connection;

namespace colltest::http {

struct Header {
  absl::string_view name;
  absl::string_view value;
};

inline constexpr absl::string_view kJsonType = "application/json";
inline constexpr absl::string_view kNdjsonType = "application/x-ndjson";

// Sends a whole reply. Returns `status`, which a CivetWeb handler returns for its access log.
int SendReply(mg_connection* conn, int status, absl::string_view content_type,
              absl::string_view body, std::initializer_list<Header> headers = {});

// `json` (one object) and a newline, as application/json.
int SendJson(mg_connection* conn, int status, absl::string_view json);

// The error body {"code":"NAME","message":"..."} with the status's HTTP status (status_map.h).
int SendError(mg_connection* conn, const absl::Status& status,
              std::initializer_list<Header> headers = {});

// A 200 reply of unknown length whose body is one JSON object per line, each sent as soon as it
// is written: chunked under HTTP/1.1, ended by closing the connection under HTTP/1.0.
class NdjsonStream {
 public:
  explicit NdjsonStream(mg_connection* conn) : conn_(conn) {}

  // Sends the status line and headers (a client already gone shows at the first WriteLine).
  void Start();
  // Sends `json` and a newline; false when the client is gone (or did not read for the request
  // timeout), and the connection is then closed after the handler returns.
  bool WriteLine(absl::string_view json);
  // Ends the body (the last chunk).
  void End();

 private:
  mg_connection* conn_;
  bool chunked_ = true;
};

}  // namespace colltest::http
