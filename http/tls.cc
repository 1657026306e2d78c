#include "http/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>

#include "absl/strings/str_cat.h"

namespace colltest::http {
namespace {

// OpenSSL's queued errors as one line (and the queue emptied, so they do not leak into the next
// caller's error on this thread).
std::string OpenSslErrors() {
  std::string text;
  while (const unsigned long error = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(error, buffer, sizeof(buffer));
    absl::StrAppend(&text, text.empty() ? "" : "; ", buffer);
  }
  return text.empty() ? "unknown OpenSSL error" : text;
}

absl::Status FileError(const std::string& what, const std::string& path) {
  return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": ", OpenSslErrors()));
}

// Requires client certificates signed by `ca_file`; the handshake fails without one.
absl::Status RequireClientCertificates(SSL_CTX* ctx, const std::string& ca_file) {
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return FileError("TLS client CA", ca_file);
  }
  // The CA names sent to the client, so that it can pick the right certificate.
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file.c_str());
  if (names == nullptr) return FileError("TLS client CA", ca_file);
  SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return absl::OkStatus();
}

}  // namespace

absl::Status ConfigureServerTls(void* ssl_ctx, const TlsFiles& files) {
  SSL_CTX* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  ERR_clear_error();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    return absl::InternalError(absl::StrCat("TLS 1.2: ", OpenSslErrors()));
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return FileError("TLS certificate", files.cert);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return FileError("TLS key", files.key);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS key ", files.key, " does not match ", files.cert, ": ", OpenSslErrors()));
  }
  if (files.client_ca.empty()) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return absl::OkStatus();
  }
  return RequireClientCertificates(ctx, files.client_ca);
}

std::optional<std::string> SubjectCommonName(const void* x509) {
  if (x509 == nullptr) return std::nullopt;
  X509_NAME* subject = X509_get_subject_name(static_cast<const X509*>(x509));
  const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0) return std::nullopt;
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  const int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return std::nullopt;
  const std::unique_ptr<unsigned char, void (*)(void*)> owned(utf8,
                                                              [](void* p) { OPENSSL_free(p); });
  std::string name(reinterpret_cast<const char*>(utf8), static_cast<size_t>(length));
  // A NUL would let "admin\0.example" pass for "admin" wherever the name is read as a C string.
  if (name.find('\0') != std::string::npos) return std::nullopt;
  return name;
}

}  // namespace colltest::http
