/* The one function Debian's CivetWeb 1.15 looks up in libssl that OpenSSL 3 no longer exports
 * (civetweb issue #1334): CivetWeb loads OpenSSL with dlopen("libssl.so") and fails its TLS setup
 * when a symbol is missing. This library is named libssl.so by its SONAME and depends on the real
 * libssl, so once loaded (openssl_compat.cc) CivetWeb's dlopen finds it, and dlsym finds every
 * other function in the real libssl behind it. */
#include <openssl/ssl.h>

/* OpenSSL 3 keeps the old name only as a macro for SSL_get1_peer_certificate. */
#undef SSL_get_peer_certificate

__attribute__((visibility("default"))) X509* SSL_get_peer_certificate(const SSL* ssl) {
  /* The same contract: the peer's certificate with a reference the caller frees. */
  return SSL_get1_peer_certificate(ssl);
}
