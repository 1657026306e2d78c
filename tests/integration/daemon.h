// A real colltestd for integration tests: started on an ephemeral loopback port, ready when it
// prints its "listening" line (read from a pipe, never slept for), stopped with SIGTERM.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "colltest/v1/colltest.grpc.pb.h"

namespace colltest::testing {

std::string BinDir();
// colltest-worker-breaks in BinDir(): the test build of the worker, the only one that reads
// COLLTEST_BREAK_PROTOCOL (worker/backends/cpu/protocol_breaks_env.h) and COLLTEST_TEST_FAULT
// (worker/test_fault_env.h). A test that breaks a protocol rule or a node in real worker processes
// passes it to colltestd as `--worker`.
std::string BreaksWorkerPath();

class Daemon {
 public:
  // Starts colltestd with the cpu backend and `cpu_ranks` ranks plus `extra_args` (which may
  // replace the default "--listen 127.0.0.1:0"); `env` entries ("NAME=value") are added to its
  // environment (and its workers').
  static std::unique_ptr<Daemon> Start(int cpu_ranks, std::vector<std::string> extra_args = {},
                                       std::vector<std::string> env = {});
  // Starts colltestd with `--backend backend` (cuda, hip, auto) plus `extra_args` and `env`.
  // `open_files` > 0: colltestd starts with RLIMIT_NOFILE soft = hard = open_files.
  static std::unique_ptr<Daemon> StartWithBackend(const std::string& backend,
                                                  std::vector<std::string> extra_args = {},
                                                  std::vector<std::string> env = {},
                                                  uint64_t open_files = 0);
  ~Daemon();

  const std::string& address() const { return address_; }
  // The metrics address from the "http=" field of the listening line ("" without --http).
  const std::string& http_address() const { return http_address_; }
  pid_t pid() const { return pid_; }
  std::unique_ptr<colltest::v1::CollectiveTest::Stub> Stub() const;
  // colltest-worker processes whose parent is this daemon.
  std::vector<pid_t> WorkerPids() const;
  // The worker serving `device` (from its --device argument), -1 if none.
  pid_t WorkerPidForDevice(uint32_t device) const;
  // Every child process of the daemon, zombies included (a child not reaped is a leak too).
  std::vector<pid_t> ChildPids() const;
  // File descriptors the daemon holds open.
  size_t OpenFds() const;
  // Shared-memory segments created for this daemon's workers.
  std::vector<std::string> ShmSegments() const;
  // SIGTERM and wait (SIGKILL after 10 s); returns the exit status as waitpid reports it.
  int Stop();
  // SIGKILL and wait: colltestd gets no chance to finish anything (its workers follow it).
  void Kill();
  // The --state-dir it runs with: a fresh directory of its own (removed with the Daemon) unless
  // the test passed one.
  const std::string& state_dir() const { return state_dir_; }

 private:
  pid_t pid_ = -1;
  std::string address_;
  std::string http_address_;
  bool stopped_ = false;
  std::string state_dir_;
  bool own_state_dir_ = false;
};

struct HttpReply {
  int status = 0;  // 0: no reply
  std::string body;
  int local_port = 0;  // the client's own port, as the server saw it
};

// One HTTP/1.0 exchange with colltestd's --http port (the server closes when done, so there is no
// chunked body to decode), with `token` as a bearer token when not empty. Reads are bounded (60 s)
// so that a stuck server fails the test.
HttpReply Http(const std::string& address, const std::string& method, const std::string& path,
               const std::string& body = "", const std::string& token = "");

// Runs a command, returns (exit code, stdout + stderr).
std::pair<int, std::string> RunCommand(const std::vector<std::string>& argv);

// One lamport case of m x n on `world` ranks, everything else the server's defaults.
colltest::v1::RunRequest LamportRun(uint32_t world, uint32_t m, uint32_t n);

// Writes `contents` to a file named `name` in the test's temporary directory, mode 0600 (a token
// file colltestd accepts without a warning), and returns its path.
std::string WriteTokenFile(const std::string& name, const std::string& contents);

}  // namespace colltest::testing
