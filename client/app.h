// The whole CLI behind main(): parse, connect, run the command, map the outcome to an exit code.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace colltest::client {

// `args` includes the program name. Returns the process exit code (see exit_code.h).
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace colltest::client
