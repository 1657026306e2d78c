#include "server/options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/net/listen_address.h"

namespace colltest::server {
namespace {

ParsedOptions Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "colltestd");
  return ParseOptions(static_cast<int>(args.size()), args.data());
}

TEST(OptionsTest, Defaults) {
  ParsedOptions p = Parse({});
  ASSERT_TRUE(p.options.has_value());
  EXPECT_EQ(p.options->listen, "127.0.0.1:50051");
  EXPECT_EQ(p.options->backend, "auto");
  EXPECT_EQ(p.options->cpu_ranks, 4u);
  EXPECT_EQ(p.options->max_case_bytes, 32ull << 20);
  EXPECT_FALSE(p.options->allow_fault_injection);
  EXPECT_THAT(p.options->worker, ::testing::EndsWith("/colltest-worker"));
}

TEST(OptionsTest, EveryFlag) {
  ParsedOptions p = Parse({"--listen",
                           "0.0.0.0:0",
                           "--backend",
                           "cpu",
                           "--cpu-ranks",
                           "8",
                           "--devices",
                           "0,2",
                           "--http",
                           "127.0.0.1:9464",
                           "--state-dir",
                           "/tmp",
                           "--allow-fault-injection",
                           "--worker",
                           "/opt/w",
                           "--max-case-bytes",
                           "64MiB",
                           "--runtime-dir",
                           "/run/x",
                           "--insecure-listen",
                           "--history-max-bytes",
                           "4MiB"});
  ASSERT_TRUE(p.options.has_value());
  EXPECT_EQ(p.options->listen, "0.0.0.0:0");
  EXPECT_EQ(p.options->backend, "cpu");
  EXPECT_EQ(p.options->cpu_ranks, 8u);
  EXPECT_THAT(p.options->devices, ::testing::ElementsAre(0, 2));
  EXPECT_EQ(p.options->http, "127.0.0.1:9464");
  EXPECT_EQ(p.options->state_dir, "/tmp");
  EXPECT_TRUE(p.options->allow_fault_injection);
  EXPECT_EQ(p.options->worker, "/opt/w");
  EXPECT_EQ(p.options->max_case_bytes, 64ull << 20);
  EXPECT_EQ(p.options->runtime_dir, "/run/x");
  EXPECT_TRUE(p.options->insecure_listen);
  EXPECT_EQ(p.options->history_max_bytes, 4ull << 20);
}

// Ranks that share a GPU (docs/shared-gpu.md): 1 to 8 slots a GPU, one by default.
TEST(OptionsTest, RanksPerGpuAndTimeSlicing) {
  EXPECT_EQ(Parse({}).options->ranks_per_gpu, 1u);
  EXPECT_FALSE(Parse({}).options->allow_time_slicing);
  const ParsedOptions p = Parse({"--ranks-per-gpu", "8", "--allow-time-slicing"});
  EXPECT_EQ(p.options->ranks_per_gpu, 8u);
  EXPECT_TRUE(p.options->allow_time_slicing);
  EXPECT_EQ(Parse({"--ranks-per-gpu", "0"}).exit_code, 2);
  EXPECT_EQ(Parse({"--ranks-per-gpu", "9"}).exit_code, 2);
}

TEST(OptionsTest, HistoryRetentionDefaultsAndGrammar) {
  EXPECT_EQ(Parse({}).options->history_max_runs, 10000u);
  EXPECT_EQ(Parse({}).options->history_max_age, absl::Hours(24 * 90));
  EXPECT_EQ(Parse({"--history-max-age", "7d"}).options->history_max_age, absl::Hours(24 * 7));
  EXPECT_EQ(Parse({"--history-max-age", "36h"}).options->history_max_age, absl::Hours(36));
  EXPECT_EQ(Parse({"--history-max-age", "0"}).exit_code, 2);
  EXPECT_EQ(Parse({"--history-max-runs", "0"}).options->history_max_runs, 0u);
  EXPECT_EQ(Parse({"--history-max-runs", "-1"}).exit_code, 2);
  EXPECT_EQ(Parse({"--history-prune-interval", "2s"}).options->history_prune_interval,
            absl::Seconds(2));
  EXPECT_EQ(Parse({"--state-dir", "/var/lib/colltest"}).options->state_dir, "/var/lib/colltest");
}

TEST(OptionsTest, HistoryMaxBytesDefaultsTo1GiBAndReadsTheSharedSizeGrammar) {
  EXPECT_EQ(Parse({}).options->history_max_bytes, 1ull << 30);
  EXPECT_EQ(Parse({"--history-max-bytes", "1GiB"}).options->history_max_bytes, 1ull << 30);
  EXPECT_EQ(Parse({"--history-max-bytes", "64M"}).options->history_max_bytes, 64ull << 20);
  EXPECT_EQ(Parse({"--history-max-bytes", "0"}).exit_code, 2);
  EXPECT_EQ(Parse({"--history-max-bytes", "lots"}).exit_code, 2);
}

TEST(OptionsTest, LoopbackAddresses) {
  for (const char* listen : {"127.0.0.1:1", "127.1.2.3:1", "localhost:1", "[::1]:1",
                             "[::ffff:127.0.0.1]:1", "unix:/run/colltestd.sock"}) {
    EXPECT_TRUE(IsLoopbackListen(listen)) << listen;
  }
  for (const char* listen :
       {"0.0.0.0:1", "[::]:1", "10.0.0.1:1", "128.0.0.1:1", "example.com:1", "[::2]:1"}) {
    EXPECT_FALSE(IsLoopbackListen(listen)) << listen;
  }
}

TEST(OptionsTest, ANonLoopbackListenNeedsTlsATokenFileOrInsecureListen) {
  ServerOptions o;
  o.listen = "0.0.0.0:50051";
  const absl::Status refused = CheckListenIsProtected(o);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  for (const char* flag :
       {"--listen 0.0.0.0:50051", "--tls-cert", "--token-file", "--insecure-listen"}) {
    EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr(flag));
  }
  EXPECT_EQ(Parse({"--listen", "0.0.0.0:50051"}).exit_code, 2);
  o.insecure_listen = true;
  EXPECT_TRUE(CheckListenIsProtected(o).ok());
  o.insecure_listen = false;
  o.token_file = "/etc/colltestd/tokens";
  EXPECT_TRUE(CheckListenIsProtected(o).ok());
  o.token_file.clear();
  o.tls.cert = "/etc/colltestd/cert.pem";
  EXPECT_TRUE(CheckListenIsProtected(o).ok());
}

// The host name reported (MachineIdentity.hostname, the metrics' Hostname): a DNS name.
TEST(OptionsTest, HostnameIsADnsName) {
  EXPECT_EQ(Parse({}).options->hostname, "");
  EXPECT_EQ(Parse({"--hostname", "gpu-node-17.dc1"}).options->hostname, "gpu-node-17.dc1");
  EXPECT_EQ(Parse({"--hostname", ""}).exit_code, 2);
  EXPECT_EQ(Parse({"--hostname", "node 1"}).exit_code, 2);
  EXPECT_EQ(Parse({"--hostname", "node\"x"}).exit_code, 2);
  const std::string longest(253, 'a');
  const std::string too_long(254, 'a');
  EXPECT_EQ(Parse({"--hostname", longest.c_str()}).options->hostname, longest);
  EXPECT_EQ(Parse({"--hostname", too_long.c_str()}).exit_code, 2);
}

TEST(OptionsTest, UsageErrors) {
  EXPECT_EQ(Parse({"--backend", "opencl"}).exit_code, 2);
  EXPECT_EQ(Parse({"--listen", "nohostport"}).exit_code, 2);
  EXPECT_EQ(Parse({"--tls-key", "/etc/hostname"}).exit_code, 2);  // needs --tls-cert
  EXPECT_EQ(Parse({"--token-file", "/does/not/exist"}).exit_code, 2);
  EXPECT_EQ(Parse({"--no-such-flag"}).exit_code, 2);
  EXPECT_FALSE(Parse({"--cpu-ranks", "0"}).options.has_value());
}

// Baselines one caller may own (docs/history.md): 32 by default, 0 for no bound.
TEST(OptionsTest, MaxBaselinesPerOwner) {
  EXPECT_EQ(Parse({}).options->max_baselines_per_owner, 32u);
  EXPECT_EQ(Parse({"--max-baselines-per-owner", "0"}).options->max_baselines_per_owner, 0u);
  EXPECT_EQ(Parse({"--max-baselines-per-owner", "4"}).options->max_baselines_per_owner, 4u);
  EXPECT_EQ(Parse({"--max-baselines-per-owner", "-1"}).exit_code, 2);
  EXPECT_EQ(Parse({"--max-baselines-per-owner", "1000001"}).exit_code, 2);
}

// Health checks one caller may start per minute (docs/limits.md): 30 by default, 0 for no bound.
TEST(OptionsTest, HealthRatePerCaller) {
  EXPECT_EQ(Parse({}).options->health_rate_per_caller, 30u);
  EXPECT_EQ(Parse({"--health-rate-per-caller", "0"}).options->health_rate_per_caller, 0u);
  EXPECT_EQ(Parse({"--health-rate-per-caller", "120"}).options->health_rate_per_caller, 120u);
  EXPECT_EQ(Parse({"--health-rate-per-caller", "-1"}).exit_code, 2);
  EXPECT_EQ(Parse({"--health-rate-per-caller", "100001"}).exit_code, 2);
  EXPECT_EQ(Parse({"--health-rate-per-caller", "often"}).exit_code, 2);
}

TEST(OptionsTest, HttpLimitsAndAllowedHosts) {
  const ParsedOptions defaults = Parse({});
  ASSERT_TRUE(defaults.options.has_value());
  EXPECT_EQ(defaults.options->http_threads, 64u);
  EXPECT_EQ(defaults.options->http_body_timeout, absl::Seconds(10));
  EXPECT_EQ(defaults.options->http_max_body_readers, 16u);
  EXPECT_EQ(defaults.options->http_max_body_readers_per_peer, 4u);
  const ParsedOptions p =
      Parse({"--http-threads", "32", "--http-body-timeout", "3s", "--http-max-body-readers", "8",
             "--http-max-body-readers-per-peer", "2", "--http-allowed-host", "lab.example",
             "--http-allowed-host", "proxy.example:8443"});
  ASSERT_TRUE(p.options.has_value());
  EXPECT_EQ(p.options->http_threads, 32u);
  EXPECT_EQ(p.options->http_body_timeout, absl::Seconds(3));
  EXPECT_EQ(p.options->http_max_body_readers, 8u);
  EXPECT_EQ(p.options->http_max_body_readers_per_peer, 2u);
  EXPECT_THAT(p.options->http_allowed_hosts,
              ::testing::ElementsAre("lab.example", "proxy.example:8443"));
  // Body readers must leave threads to /healthz and GETs, and a peer cannot have more than all.
  EXPECT_EQ(Parse({"--http-threads", "16", "--http-max-body-readers", "16"}).exit_code, 2);
  EXPECT_EQ(
      Parse({"--http-max-body-readers", "4", "--http-max-body-readers-per-peer", "5"}).exit_code,
      2);
  EXPECT_EQ(Parse({"--http-body-timeout", "0s"}).exit_code, 2);
  EXPECT_EQ(Parse({"--http-allowed-host", "http://x/"}).exit_code, 2);
}

TEST(OptionsTest, ListenHost) {
  EXPECT_EQ(ListenHost("127.0.0.1:0"), "127.0.0.1");
  EXPECT_EQ(ListenHost("[::1]:50051"), "[::1]");
  EXPECT_EQ(ListenHost("localhost:1"), "localhost");
}

// The shared byte-size grammar: every suffix is a power of 1024, as in the client's size flags.
TEST(OptionsTest, MaxCaseBytesReadsTheSharedByteSizeGrammar) {
  EXPECT_EQ(Parse({"--max-case-bytes", "1M"}).options->max_case_bytes, 1ull << 20);
  EXPECT_EQ(Parse({"--max-case-bytes", "32MiB"}).options->max_case_bytes, 32ull << 20);
  EXPECT_EQ(Parse({"--max-case-bytes", "8k"}).options->max_case_bytes, 8192u);
  EXPECT_EQ(Parse({"--max-case-bytes", "1G"}).options->max_case_bytes, 1ull << 30);
  EXPECT_EQ(Parse({"--max-case-bytes", "8q"}).exit_code, 2);
  EXPECT_EQ(Parse({"--max-case-bytes", "16777216T"}).exit_code, 2);  // 2^64: overflow
}

}  // namespace
}  // namespace colltest::server
