// What a listen address ("host:port", "[::1]:port" or "unix:PATH") says about who can reach it.
#pragma once

#include <string>

namespace colltest::server {

// "127.0.0.1" of "127.0.0.1:50051", "[::1]" of "[::1]:0".
std::string ListenHost(const std::string& listen);
// Whether only this machine can reach `listen`: 127.0.0.0/8, ::1, localhost or a unix: socket.
bool IsLoopbackListen(const std::string& listen);

}  // namespace colltest::server
