// colltest: command-line client of colltestd (docs/design.md sections 9 and 10).
#include <iostream>
#include <string>
#include <vector>

#include "client/app.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return colltest::client::RunCli(args, std::cout, std::cerr);
}
