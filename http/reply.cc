#include "http/reply.h"

#include <civetweb.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "http/status_map.h"

namespace colltest::http {
namespace {

void AddHeader(mg_connection* conn, absl::string_view name, absl::string_view value) {
  // CivetWeb copies both; the name must be NUL-terminated, the value is given with its length.
  mg_response_header_add(conn, std::string(name).c_str(), value.data(),
                         static_cast<int>(value.size()));
}

void StartHeaders(mg_connection* conn, int status, absl::string_view content_type) {
  mg_response_header_start(conn, status);
  AddHeader(conn, "Content-Type", content_type);
  AddHeader(conn, "X-Content-Type-Options", "nosniff");
}

}  // namespace

int SendReply(mg_connection* conn, int status, absl::string_view content_type,
              absl::string_view body, std::initializer_list<Header> headers) {
  StartHeaders(conn, status, content_type);
  for (const Header& header : headers) AddHeader(conn, header.name, header.value);
  AddHeader(conn, "Content-Length", absl::StrCat(body.size()));
  mg_response_header_send(conn);
  if (!body.empty()) mg_write(conn, body.data(), body.size());
  return status;
}

int SendJson(mg_connection* conn, int status, absl::string_view json) {
  return SendReply(conn, status, kJsonType, absl::StrCat(json, "\n"));
}

int SendError(mg_connection* conn, const absl::Status& status,
              std::initializer_list<Header> headers) {
  return SendReply(conn, HttpStatusOf(status), kJsonType, absl::StrCat(ErrorJson(status), "\n"),
                   headers);
}

void StreamedReply::Start(std::initializer_list<Header> headers) {
  const mg_request_info* info = mg_get_request_info(conn_);
  // HTTP/1.0 has no chunked encoding: the body then ends when the connection closes.
  chunked_ = info->http_version == nullptr || absl::string_view(info->http_version) != "1.0";
  StartHeaders(conn_, 200, content_type_);
  for (const Header& header : headers) AddHeader(conn_, header.name, header.value);
  if (chunked_) {
    AddHeader(conn_, "Transfer-Encoding", "chunked");
  } else {
    mg_disable_connection_keep_alive(conn_);
  }
  mg_response_header_send(conn_);
}

bool StreamedReply::Write(absl::string_view bytes) {
  if (client_gone_) return false;
  // mg_write goes straight to the socket (no buffer of CivetWeb's), so each write is flushed.
  const bool sent =
      chunked_ ? mg_send_chunk(conn_, bytes.data(), static_cast<unsigned>(bytes.size())) > 0
               : mg_write(conn_, bytes.data(), bytes.size()) == static_cast<int>(bytes.size());
  if (!sent) {
    // The body is cut short: the connection must not carry another reply.
    client_gone_ = true;
    mg_disable_connection_keep_alive(conn_);
  }
  return sent;
}

void StreamedReply::End() {
  if (chunked_ && !client_gone_) mg_send_chunk(conn_, "", 0);
}

void NdjsonStream::Start() {
  absl::MutexLock lock(&mu_);
  reply_.Start({{"Cache-Control", "no-store"}});
  last_write_ = absl::Now();
}

bool NdjsonStream::WriteLine(absl::string_view json) {
  const std::string line = absl::StrCat(json, "\n");
  absl::MutexLock lock(&mu_);
  last_write_ = absl::Now();
  return reply_.Write(line);
}

bool NdjsonStream::WriteLineInPieces(
    absl::FunctionRef<bool(absl::FunctionRef<bool(absl::string_view)>)> write) {
  absl::MutexLock lock(&mu_);
  last_write_ = absl::Now();
  return write([this](absl::string_view piece)
                   ABSL_NO_THREAD_SAFETY_ANALYSIS { return reply_.Write(piece); }) &&
         reply_.Write("\n");
}

bool NdjsonStream::Heartbeat(absl::Duration quiet) {
  absl::MutexLock lock(&mu_);
  if (absl::Now() - last_write_ < quiet) return true;
  last_write_ = absl::Now();
  return reply_.Write("\n");
}

void NdjsonStream::End() {
  absl::MutexLock lock(&mu_);
  reply_.End();
}

}  // namespace colltest::http
