// The HTTP port's TLS, set up with OpenSSL on the SSL_CTX that CivetWeb creates: the certificate
// chain and key, and with a client CA, client certificates required and verified against it.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace colltest::http {

struct TlsFiles {
  std::string cert;       // PEM: the certificate, then its chain
  std::string key;        // PEM private key
  std::string client_ca;  // PEM CA bundle; empty: no client certificates asked for
};

// Configures `ssl_ctx` (an SSL_CTX*) for serving; TLS 1.2 at least. The error names the file and
// OpenSSL's reason.
absl::Status ConfigureServerTls(void* ssl_ctx, const TlsFiles& files);

// The first subject CN of `x509` (an X509*) as UTF-8, as gRPC's TLS names a peer's certificate;
// nullopt without one.
std::optional<std::string> SubjectCommonName(const void* x509);

}  // namespace colltest::http
