#include "server/options.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

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
  ParsedOptions p =
      Parse({"--listen", "0.0.0.0:0", "--backend", "cpu", "--cpu-ranks", "8", "--devices", "0,2",
             "--http", "127.0.0.1:9464", "--state-dir", "/tmp", "--allow-fault-injection",
             "--worker", "/opt/w", "--max-case-bytes", "64MiB", "--runtime-dir", "/run/x"});
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
}

TEST(OptionsTest, UsageErrors) {
  EXPECT_EQ(Parse({"--backend", "opencl"}).exit_code, 2);
  EXPECT_EQ(Parse({"--listen", "nohostport"}).exit_code, 2);
  EXPECT_EQ(Parse({"--tls-key", "/etc/hostname"}).exit_code, 2);  // needs --tls-cert
  EXPECT_EQ(Parse({"--token-file", "/does/not/exist"}).exit_code, 2);
  EXPECT_EQ(Parse({"--no-such-flag"}).exit_code, 2);
  EXPECT_FALSE(Parse({"--cpu-ranks", "0"}).options.has_value());
}

TEST(OptionsTest, ListenHost) {
  EXPECT_EQ(ListenHost("127.0.0.1:0"), "127.0.0.1");
  EXPECT_EQ(ListenHost("[::1]:50051"), "[::1]");
  EXPECT_EQ(ListenHost("localhost:1"), "localhost");
}

}  // namespace
}  // namespace colltest::server
