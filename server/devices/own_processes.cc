#include "server/devices/own_processes.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"

namespace colltest::server {
namespace {

// The parent pid from /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and
// parentheses, so the fields are read after the last ')'.
bool ParentOf(const std::string& stat_path, pid_t* ppid) {
  std::ifstream in(stat_path);
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  long parent = 0;
  if (!(rest >> state >> parent)) return false;
  *ppid = static_cast<pid_t>(parent);
  return true;
}

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

}  // namespace

std::vector<int> OwnProcesses(pid_t parent, const std::string& proc_root) {
  std::vector<int> own = {static_cast<int>(parent)};
  std::unique_ptr<DIR, DirCloser> dir(opendir(proc_root.c_str()));
  if (dir == nullptr) return own;
  while (const dirent* entry = readdir(dir.get())) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid == parent) continue;
    pid_t ppid = 0;
    if (ParentOf(proc_root + "/" + entry->d_name + "/stat", &ppid) && ppid == parent) {
      own.push_back(pid);
    }
  }
  return own;
}

}  // namespace colltest::server
