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

void NdjsonStream::Start() {
  const mg_request_info* info = mg_get_request_info(conn_);
  // HTTP/1.0 has no chunked encoding: the body then ends when the connection closes.
  chunked_ = info->http_version == nullptr || absl::string_view(info->http_version) != "1.0";
  StartHeaders(conn_, 200, kNdjsonType);
  AddHeader(conn_, "Cache-Control", "no-store");
  if (chunked_) {
    AddHeader(conn_, "Transfer-Encoding", "chunked");
  } else {
    mg_disable_connection_keep_alive(conn_);
  }
  mg_response_header_send(conn_);
}

bool NdjsonStream::WriteLine(absl::string_view json) {
  const std::string line = absl::StrCat(json, "\n");
  // mg_write goes straight to the socket (no buffer of CivetWeb's), so each line is flushed.
  const bool sent =
      chunked_ ? mg_send_chunk(conn_, line.data(), static_cast<unsigned>(line.size())) > 0
               : mg_write(conn_, line.data(), line.size()) == static_cast<int>(line.size());
  // The body is cut short: the connection must not carry another reply.
  if (!sent) mg_disable_connection_keep_alive(conn_);
  return sent;
}

void NdjsonStream::End() {
  if (chunked_) mg_send_chunk(conn_, "", 0);
}

}  // namespace colltest::http
