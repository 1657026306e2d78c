// Making Debian's CivetWeb 1.15 able to use OpenSSL 3 for its TLS ports. It loads libssl at run
// time and looks up SSL_get_peer_certificate, which OpenSSL 3 has only as a macro, so its TLS setup
// fails ("Error initializing SSL context"). libcolltest_civetweb_ssl.so (civetweb_openssl3.c)
// supplies that function under the SONAME libssl.so; loaded first, it is what CivetWeb's
// dlopen("libssl.so") returns.
#pragma once

#include "absl/status/status.h"

namespace colltest::http {

// Loads libcolltest_civetweb_ssl.so (next to the executable, else in ../lib/colltest of an
// installed tree, else where it was built) when the process's libssl lacks
// SSL_get_peer_certificate; once per process. FAILED_PRECONDITION naming the paths tried when it
// cannot be loaded.
absl::Status PrepareCivetWebOpenSsl();

}  // namespace colltest::http
