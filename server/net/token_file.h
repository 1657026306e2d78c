// colltestd's --token-file: who may call, under which name and role (auth.h).
//
//   # NAME ROLE CREDENTIAL, one identity per line; blank lines and # comment lines are skipped
//   grafana   viewer  0b4f6a1c9e2d7f3a5b8c
//   ci        runner  9c2e4a6f1b3d5e7a9c0b
//   oncall    admin   cn:oncall.example.com
//
// CREDENTIAL is a bearer token (at least 16 printable characters, no blanks) or "cn:" and the
// subject CN of a client certificate (needs mutual TLS). A file holding one bare token, the format
// before roles existed, is one admin named "default".
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/net/auth.h"

namespace colltest::server {

inline constexpr size_t kMinTokenLength = 16;
// Far above any real file (a line is ~60 bytes), low enough that a wrong path cannot fill memory.
inline constexpr size_t kMaxTokenFileBytes = 1 << 20;

// The identities of a token file's text. Errors name `path`, the line and the rule: a malformed
// line, an unknown role, a short token, a name, token or CN given twice, an empty file.
absl::StatusOr<std::vector<Principal>> ParseTokenFile(absl::string_view text,
                                                      const std::string& path);

// The text of `path`, which must be a regular file (a symlink to one is fine) of at most
// kMaxTokenFileBytes. Never blocks: a FIFO, socket or device is refused naming --token-file and
// the file's type. Logs LooseModeWarning's warning.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Reads (ReadTokenFile) and parses `path`. Certificate identities need `mutual_tls`
// (--tls-client-ca): without it no client presents a verified certificate, and the line would
// silently grant nothing.
absl::StatusOr<std::vector<Principal>> LoadTokenFile(const std::string& path, bool mutual_tls);

// A warning when a file of secrets with permission bits `mode` is readable or writable by its
// group or by others; "" when only the owner may read it.
std::string LooseModeWarning(const std::string& path, unsigned mode);

}  // namespace colltest::server
