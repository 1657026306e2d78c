// colltestd's side of kernel plugins (server/devices/kernel_plugins.h) with a fake check: the
// report parsed, every way a check can end without one, the folder rules of the flag.
#include "server/devices/kernel_plugins.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::server {
namespace {

using ::testing::HasSubstr;

CommandOutcome Exited(int code, std::string output) {
  CommandOutcome o;
  o.command = "colltest-worker --check-plugin";
  o.exited = true;
  o.exit_code = code;
  o.output = std::move(output);
  return o;
}

TEST(KernelPluginReport, ParsesEveryFieldOfTheWorkersLine) {
  const auto p = ParsePluginReport(
      R"({"path":"/p/a.so","sha256":"ab","loaded":true,"refused":"","name":"a","version":"1",)"
      R"("variant":"plugin:a","backends":["cpu","cuda"],"dtypes":["bf16","fp32"],)"
      R"("world_sizes":[2,8],"epilogues":["none","nvfp4"],"graph_capture":true,)"
      R"("max_elements":4096})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->loaded());
  EXPECT_EQ(p->variant(), "plugin:a");
  EXPECT_THAT(p->backends(), ::testing::ElementsAre("cpu", "cuda"));
  EXPECT_THAT(p->dtypes(), ::testing::ElementsAre(v1::DTYPE_BF16, v1::DTYPE_FP32));
  EXPECT_THAT(p->world_sizes(), ::testing::ElementsAre(2u, 8u));
  EXPECT_THAT(p->epilogues(), ::testing::ElementsAre(v1::EPILOGUE_NONE, v1::EPILOGUE_NVFP4));
  EXPECT_TRUE(p->graph_capture());
  EXPECT_EQ(p->max_elements(), 4096u);
  EXPECT_EQ(ParsePluginReport("segfault").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KernelPluginCheck, EveryEndWithoutAReportRefusesThePluginSayingHow) {
  CommandOutcome hung = Exited(0, "");
  hung.timed_out = true;
  CommandOutcome killed;
  killed.signal = 11;
  const std::vector<std::pair<absl::StatusOr<CommandOutcome>, std::string>> ends = {
      {hung, "did not finish within 10s (the plugin hung while it loaded)"},
      {killed, "the check died (signal 11): the plugin crashed while it loaded"},
      {Exited(2, "usage\n"), "the check printed no report (exit status 2): not a plugin report"},
      {absl::NotFoundError("no such file"), "the check could not start: no such file"},
  };
  for (const auto& [end, why] : ends) {
    const auto plugins = CheckKernelPlugins({"/p/x.so"}, [&](const std::string&) { return end; });
    ASSERT_EQ(plugins.size(), 1u);
    EXPECT_EQ(plugins[0].path(), "/p/x.so");
    EXPECT_FALSE(plugins[0].loaded());
    EXPECT_THAT(plugins[0].refused(), HasSubstr(why));
  }
}

TEST(KernelPluginCheck, ASecondPluginOfOneNameIsRefusedNamingTheFirst) {
  const std::string line = R"({"loaded":true,"refused":"","name":"same","variant":"plugin:same"})";
  const auto plugins = CheckKernelPlugins({"/p/a.so", "/p/b.so"},
                                          [&](const std::string&) { return Exited(0, line); });
  ASSERT_EQ(plugins.size(), 2u);
  EXPECT_TRUE(plugins[0].loaded());
  EXPECT_FALSE(plugins[1].loaded());
  EXPECT_EQ(plugins[1].refused(), "name 'same' is already the plugin /p/a.so");
}

TEST(KernelPluginPaths, TheDefaultFolderMayBeMissingAGivenOneMayNot) {
  const auto none = KernelPluginPaths({"/x/one.so"}, "/nonexistent/plugins", false);
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, ::testing::ElementsAre("/x/one.so"));
  const auto given = KernelPluginPaths({}, "/nonexistent/plugins", true);
  EXPECT_EQ(given.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(given.status().message()),
              HasSubstr("--kernel-plugin-dir /nonexistent/plugins: "));
}

}  // namespace
}  // namespace colltest::server
