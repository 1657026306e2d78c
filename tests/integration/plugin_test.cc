// Kernel plugins given to a real colltestd (docs/plugins.md): each is checked in a process of its
// own, ListDevices and `colltest devices` report every one loaded or refused with its reason, a
// plugin that crashes while it loads never takes colltestd down, and an unreadable
// --kernel-plugin-dir stops colltestd naming the flag.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"
#include "tests/integration/plugin_dir.h"

namespace colltest::testing {
namespace {

namespace fs = std::filesystem;

constexpr fs::perms kPrivate = PluginDir::kMode;

TEST(KernelPlugins, EveryPluginIsReportedLoadedOrRefusedAndColltestdServesOn) {
  PluginDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string noop = dir.Add("noop_cpu", "a_noop.so", kPrivate);
  dir.Add("noop_cpu", "b_noop_again.so", kPrivate);
  dir.Add("wrong_abi", "c_wrong_abi.so", kPrivate);
  dir.Add("crash_on_load", "d_crash.so", kPrivate);
  dir.Add("noop_cpu", "e_loose.so", kPrivate | fs::perms::others_write);
  auto daemon = Daemon::Start(2, {"--kernel-plugin-dir", dir.path()});
  ASSERT_NE(daemon, nullptr);

  auto [code, out] = RunCommand(
      {BinDir() + "/colltest", "--server", daemon->address(), "devices", "--format", "json"});
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json plugins = nlohmann::json::parse(out)["kernel_plugins"];
  ASSERT_EQ(plugins.size(), 5u) << out;
  EXPECT_EQ(plugins[0]["path"], noop);
  EXPECT_EQ(plugins[0]["loaded"], true) << plugins[0].dump();
  EXPECT_EQ(plugins[0]["variant"], "plugin:noop");
  EXPECT_EQ(plugins[0]["world_sizes"], nlohmann::json::array({2, 4}));
  EXPECT_EQ(plugins[0]["dtypes"], nlohmann::json::array({"bf16", "fp32"}));
  auto [sum_code, sum] = RunCommand({"sha256sum", noop});
  EXPECT_EQ(sum.substr(0, 64), plugins[0]["sha256"]) << sum;
  const std::vector<std::string> refused = {
      "name 'noop' is already the plugin " + noop,
      "abi_version = 2: this worker loads version 1",
      "the check died (signal 6): the plugin crashed while it loaded",
      "e_loose.so is writable by others (mode 0757)",
  };
  for (size_t i = 0; i < refused.size(); ++i) {
    EXPECT_EQ(plugins[i + 1]["loaded"], false) << plugins[i + 1].dump();
    EXPECT_NE(plugins[i + 1]["refused"].get<std::string>().find(refused[i]), std::string::npos)
        << plugins[i + 1].dump();
  }
  // The table names them too, and the group still runs cases.
  auto [table_code, table] =
      RunCommand({BinDir() + "/colltest", "--server", daemon->address(), "devices"});
  EXPECT_EQ(table_code, 0) << table;
  EXPECT_NE(table.find("plugin:noop"), std::string::npos) << table;
  EXPECT_NE(table.find("the plugin crashed while it loaded"), std::string::npos) << table;
  auto [run_code, run] =
      RunCommand({BinDir() + "/colltest", "--server", daemon->address(), "run", "--world", "2",
                  "--m", "1", "--n", "128", "--variants", "lamport", "--modes", "eager"});
  EXPECT_EQ(run_code, 0) << run;
}

TEST(KernelPlugins, AnUnreadablePluginFolderStopsColltestdNamingTheFlag) {
  char state[] = "/tmp/colltest-plugin-state-XXXXXX";
  ASSERT_NE(mkdtemp(state), nullptr);
  auto [code, out] = RunCommand({BinDir() + "/colltestd", "--backend", "cpu", "--cpu-ranks", "2",
                                 "--listen", "127.0.0.1:0", "--state-dir", state,
                                 "--kernel-plugin-dir", std::string(state) + "/missing"});
  fs::remove_all(state);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("--kernel-plugin-dir " + std::string(state) + "/missing"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace colltest::testing
