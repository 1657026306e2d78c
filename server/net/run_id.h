// Run ids that a client cannot guess: knowing one's own ids tells nothing about another client's,
// so an id is not a handle anyone can enumerate (GetRun, Cancel).
#pragma once

#include <string>

namespace colltest::server {

// "r-" followed by 32 lower-case hex digits: 128 bits from the kernel's random source
// (getrandom(2)). Aborts if the kernel cannot provide them, since a predictable id would be a
// silent security hole.
std::string NewRunId();

// 32 random hex digits from the same source: the secret the HTTP gateway proves itself with
// (auth.h), made once per process.
std::string NewSecret();

}  // namespace colltest::server
