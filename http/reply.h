// Writing replies on a CivetWeb connection: whole replies with a Content-Length, the JSON error
// body, streamed replies, and a newline-delimited JSON stream. Every reply carries
// X-Content-Type-Options: nosniff so that a browser never guesses a type other than the one sent.
#pragma once

#include <initializer_list>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

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

// A 200 reply of unknown length, each write sent at once: chunked under HTTP/1.1, ended by
// closing the connection under HTTP/1.0. Not thread-safe.
class StreamedReply {
 public:
  StreamedReply(mg_connection* conn, absl::string_view content_type)
      : conn_(conn), content_type_(content_type) {}

  // Sends the status line and headers, `headers` among them (a client already gone shows at the
  // first Write).
  void Start(std::initializer_list<Header> headers = {});
  // Sends `bytes`; false when the client is gone (or did not read for the request timeout), and
  // from then on (nothing more is sent; the connection is closed after the handler returns).
  bool Write(absl::string_view bytes);
  // Ends the body (the last chunk).
  void End();

 private:
  mg_connection* conn_;
  absl::string_view content_type_;
  bool chunked_ = true;
  bool client_gone_ = false;
};

// A streamed reply whose body is one JSON object per line. Thread-safe: a heartbeat thread may
// write its empty lines between the events (stream_heartbeat.h).
class NdjsonStream {
 public:
  explicit NdjsonStream(mg_connection* conn) : reply_(conn, kNdjsonType) {}

  void Start();
  // Sends `json` and a newline; false when the client is gone.
  bool WriteLine(absl::string_view json);
  // The same for a line that `write` produces in pieces, each sent as it is given to the sink.
  bool WriteLineInPieces(absl::FunctionRef<bool(absl::FunctionRef<bool(absl::string_view)>)> write);
  // Sends an empty line ("\n", which NDJSON readers skip) when nothing was sent for `quiet`;
  // false when the client is gone.
  bool Heartbeat(absl::Duration quiet);
  void End();

 private:
  absl::Mutex mu_;
  StreamedReply reply_ ABSL_GUARDED_BY(mu_);
  absl::Time last_write_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace colltest::http
