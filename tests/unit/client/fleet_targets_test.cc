#include "client/fleet/fleet_targets.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Names the tests resolve, without DNS: "svc" is a headless Service of three pods, listed out of
// order and with one address twice, as resolvers may.
absl::StatusOr<std::vector<std::string>> FakeResolve(const std::string& host) {
  static const std::map<std::string, std::vector<std::string>> kNames = {
      {"svc", {"10.0.0.9", "10.0.0.10", "fd00::7", "10.0.0.9"}},
      {"node-a", {"10.0.0.9"}},
      {"empty", {}},
  };
  const auto it = kNames.find(host);
  if (it == kNames.end()) return absl::NotFoundError(absl::StrCat(host, " does not resolve"));
  return it->second;
}

absl::StatusOr<std::vector<FleetTarget>> Resolve(absl::string_view list) {
  return ResolveFleetTargets(SplitTargetsFlag(list), FakeResolve);
}

std::vector<std::string> Names(const std::vector<FleetTarget>& targets) {
  std::vector<std::string> names;
  for (const FleetTarget& t : targets) names.push_back(t.name);
  return names;
}

TEST(FleetTargetsTest, AddressLiteralsAreOneNodeEach) {
  absl::StatusOr<std::vector<FleetTarget>> t = Resolve("10.0.0.1:50051, [fd00::1]:7000");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].name, "10.0.0.1:50051");
  EXPECT_EQ((*t)[0].address, "ipv4:10.0.0.1:50051");
  EXPECT_EQ((*t)[0].host_name, "");
  EXPECT_EQ((*t)[1].name, "[fd00::1]:7000");
  EXPECT_EQ((*t)[1].address, "ipv6:[fd00::1]:7000");
}

TEST(FleetTargetsTest, ANameBecomesANodePerAddressSortedWithoutRepeats) {
  absl::StatusOr<std::vector<FleetTarget>> t = Resolve("svc:50051");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Names(*t),
              ElementsAre("svc/10.0.0.9:50051", "svc/10.0.0.10:50051", "svc/[fd00::7]:50051"));
  EXPECT_EQ((*t)[0].address, "ipv4:10.0.0.9:50051");
  EXPECT_EQ((*t)[2].address, "ipv6:[fd00::7]:50051");
  EXPECT_EQ((*t)[0].host_name, "svc");
}

TEST(FleetTargetsTest, GetaddrinfoResolvesLocalhost) {
  absl::StatusOr<std::vector<std::string>> addresses = ResolveWithGetaddrinfo("localhost");
  ASSERT_TRUE(addresses.ok()) << addresses.status();
  EXPECT_THAT(*addresses, ::testing::Contains("127.0.0.1"));
  absl::StatusOr<std::vector<FleetTarget>> t =
      ResolveFleetTargets(SplitTargetsFlag("localhost:50051"), ResolveWithGetaddrinfo);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Names(*t), ::testing::Contains("localhost/127.0.0.1:50051"));
}

TEST(FleetTargetsTest, MalformedEntriesAreRefusedNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"10.0.0.1", "entry 1 '10.0.0.1': missing :PORT"},
      {"10.0.0.1:", "entry 1 '10.0.0.1:': missing port"},
      {"10.0.0.2:1,10.0.0.1:0", "entry 2 '10.0.0.1:0': invalid port '0'"},
      {"10.0.0.1:65536", "invalid port '65536'"},
      {"10.0.0.1:+80", "invalid port '+80'"},
      {"10.0.0.1:http", "invalid port 'http'"},
      {"::1:50051", "an IPv6 address needs brackets"},
      {"[::1]50051", "missing :PORT after ']'"},
      {"[::1:50051", "'[' without ']'"},
      {"[node-a]:1", "'node-a' is not an IPv6 address"},
      {"10.0.0:1", "'10.0.0' is not an IPv4 address"},
      {"300.1.1.1:1", "'300.1.1.1' is not an IPv4 address"},
      {":50051", "missing host"},
      {"http://x:1", "a URL: give it without the scheme"},
      {"x/y:1", "'x/y' is neither an address nor a host name"},
      {"bad..name:1", "neither an address nor a host name"},
      {"10.0.0.1:1,,10.0.0.2:1", "entry 2 '': empty entry"},
  };
  for (const auto& [list, message] : cases) {
    absl::StatusOr<std::vector<FleetTarget>> t = Resolve(list);
    ASSERT_FALSE(t.ok()) << list;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_THAT(t.status().message(), HasSubstr(message)) << list;
  }
}

TEST(FleetTargetsTest, DuplicatesAreRefusedAlsoAfterResolution) {
  absl::StatusOr<std::vector<FleetTarget>> same = Resolve("10.0.0.1:1,10.0.0.2:1,10.0.0.1:1");
  ASSERT_FALSE(same.ok());
  EXPECT_THAT(same.status().message(),
              HasSubstr("entry 3 '10.0.0.1:1': 10.0.0.1:1 is already a node (--targets entry 1)"));
  // node-a is one of svc's addresses: the same node under two names.
  absl::StatusOr<std::vector<FleetTarget>> named = Resolve("svc:80,node-a:80");
  ASSERT_FALSE(named.ok());
  EXPECT_THAT(named.status().message(), HasSubstr("entry 2 'node-a:80': 10.0.0.9:80"));
  EXPECT_THAT(Resolve("[fd00::7]:1,svc:1").status().message(), HasSubstr("[fd00::7]:1"));
  // Another port is another colltestd.
  EXPECT_TRUE(Resolve("10.0.0.1:1,10.0.0.1:2").ok());
}

TEST(FleetTargetsTest, NamesThatDoNotResolveAreRefused) {
  absl::StatusOr<std::vector<FleetTarget>> t = Resolve("10.0.0.1:1,nowhere:1");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("--targets entry 2 'nowhere:1': nowhere does not"));
  EXPECT_THAT(Resolve("empty:1").status().message(), HasSubstr("resolves to no address"));
}

TEST(FleetTargetsTest, MoreThanTheMaximumIsRefused) {
  std::string list;
  for (size_t i = 0; i < kMaxFleetTargets; ++i) {
    absl::StrAppend(&list, i == 0 ? "" : ",", "10.1.", i / 256, ".", i % 256, ":50051");
  }
  absl::StatusOr<std::vector<FleetTarget>> full = Resolve(list);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->size(), kMaxFleetTargets);
  absl::StatusOr<std::vector<FleetTarget>> over = Resolve(absl::StrCat(list, ",10.2.0.0:1"));
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.status().message(), HasSubstr("entry 1025 '10.2.0.0:1': more than 1024 nodes"));
}

TEST(FleetTargetsTest, AnEmptyListIsRefused) {
  EXPECT_FALSE(Resolve("").ok());
  HealthFlags flags;
  flags.targets = " ";
  absl::StatusOr<FleetOptions> options = BuildFleetOptions(flags, absl::Minutes(2), FakeResolve);
  ASSERT_FALSE(options.ok());
  EXPECT_THAT(options.status().message(), HasSubstr("--targets: the list is empty"));
}

TEST(FleetTargetsTest, FileTakesOneEntryPerLineWithComments) {
  const std::vector<TargetEntry> entries = SplitTargetsFile(
      "# rack 1\n10.0.0.1:50051\n\n  10.0.0.2:50051   # spare\r\n#10.0.0.3:50051\nbad\n");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].text, "10.0.0.1:50051");
  EXPECT_EQ(entries[1].text, "10.0.0.2:50051");
  EXPECT_EQ(entries[2].where, "--targets-file line 6");
  absl::StatusOr<std::vector<FleetTarget>> t = ResolveFleetTargets(entries, FakeResolve);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("--targets-file line 6 'bad': missing :PORT"));
}

TEST(FleetTargetsTest, BuildFleetOptionsReadsTheFileAndAppliesDefaults) {
  const std::string path = ::testing::TempDir() + "/fleet_targets_test.txt";
  std::ofstream(path) << "10.0.0.1:1\n# comment only\nsvc:2\n";
  HealthFlags flags;
  flags.targets_file = path;
  absl::StatusOr<FleetOptions> options = BuildFleetOptions(flags, absl::Minutes(2), FakeResolve);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->targets.size(), 4u);
  EXPECT_EQ(options->parallel, kDefaultFleetParallel);
  EXPECT_EQ(options->retries, kDefaultFleetRetries);
  EXPECT_EQ(options->node_timeout, absl::Minutes(2));
  std::remove(path.c_str());
  flags.targets_file = ::testing::TempDir() + "/no-such-file";
  EXPECT_THAT(BuildFleetOptions(flags, absl::Minutes(2), FakeResolve).status().message(),
              HasSubstr("--targets-file: cannot read"));
}

TEST(FleetTargetsTest, FleetFlagsAreBounded) {
  HealthFlags flags;
  flags.targets = "10.0.0.1:1";
  flags.parallel = "256";
  flags.retries = "0";
  flags.node_timeout = "1500ms";
  absl::StatusOr<FleetOptions> options = BuildFleetOptions(flags, absl::Minutes(2), FakeResolve);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->parallel, 256u);
  EXPECT_EQ(options->retries, 0u);
  EXPECT_EQ(options->node_timeout, absl::Milliseconds(1500));
  const std::vector<std::pair<std::function<void(HealthFlags&)>, std::string>> bad = {
      {[](HealthFlags& f) { f.parallel = "0"; }, "--parallel: must be 1..256, got 0"},
      {[](HealthFlags& f) { f.parallel = "257"; }, "--parallel: must be 1..256, got 257"},
      {[](HealthFlags& f) { f.parallel = "x"; }, "--parallel"},
      {[](HealthFlags& f) { f.retries = "11"; }, "--retries: must be 0..10, got 11"},
      {[](HealthFlags& f) { f.node_timeout = "0"; }, "--node-timeout: must be more than 0"},
      {[](HealthFlags& f) { f.node_timeout = "soon"; }, "--node-timeout"},
      {[](HealthFlags& f) { f.targets_file = "x"; }, "give one list, not both"},
  };
  for (const auto& [edit, message] : bad) {
    HealthFlags f;
    f.targets = "10.0.0.1:1";
    edit(f);
    EXPECT_THAT(BuildFleetOptions(f, absl::Minutes(2), FakeResolve).status().message(),
                HasSubstr(message));
  }
}

TEST(FleetTargetsTest, FleetOnlyFlagsNeedAFleet) {
  EXPECT_TRUE(CheckNoFleetOnlyFlags(HealthFlags{}).ok());
  for (const std::string flag : {"--parallel", "--node-timeout", "--retries"}) {
    HealthFlags f;
    if (flag == "--parallel") f.parallel = "4";
    if (flag == "--node-timeout") f.node_timeout = "5s";
    if (flag == "--retries") f.retries = "1";
    EXPECT_THAT(CheckNoFleetOnlyFlags(f).message(), HasSubstr(flag + ": only for a fleet check"));
  }
  HealthFlags fleet;
  EXPECT_FALSE(IsFleetCheck(fleet));
  fleet.targets_file = "f";
  EXPECT_TRUE(IsFleetCheck(fleet));
}

}  // namespace
}  // namespace colltest::client
