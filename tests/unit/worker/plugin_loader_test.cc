// The kernel plugin loader (worker/plugins/): every rule of the exported struct, the file's owner
// and mode rules, and loading the fixture plugins of tests/plugins/fixtures.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/plugins/kernel_plugin.h"
#include "worker/plugins/plugin_fields.h"

namespace colltest::worker::plugins {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

colltest_status_t Bytes(const colltest_shape_v1_t*, uint64_t*, char*, size_t) { return 0; }
colltest_status_t Init(const colltest_group_v1_t*, void**, char*, size_t) { return 0; }
colltest_status_t Launch(void*, const colltest_launch_v1_t*, char*, size_t) { return 0; }
colltest_status_t Fini(void*, char*, size_t) { return 0; }

colltest_kernel_v1_t ValidKernel() {
  colltest_kernel_v1_t k{};
  k.abi_version = COLLTEST_KERNEL_ABI_VERSION;
  k.struct_size = sizeof(colltest_kernel_v1_t);
  k.name = "oneshot_norm";
  k.version = "2.1.0+gabcdef";
  k.backends = COLLTEST_BACKEND_CUDA | COLLTEST_BACKEND_HIP;
  k.dtypes = 1u << COLLTEST_DTYPE_BF16;
  k.world_sizes = (1u << 2) | (1u << 8);
  k.epilogues = (1u << COLLTEST_EPILOGUE_NONE) | (1u << COLLTEST_EPILOGUE_FP8_TOKEN);
  k.flags = COLLTEST_KERNEL_GRAPH_CAPTURE;
  k.max_elements = 64 * 7168;
  k.workspace_bytes = Bytes;
  k.init = Init;
  k.launch = Launch;
  k.fini = Fini;
  return k;
}

TEST(PluginFields, AValidStructPassesAndArmMayBeNull) {
  EXPECT_TRUE(CheckKernelFields(ValidKernel()).ok());
  EXPECT_EQ(PluginVariantName(ValidKernel()), "plugin:oneshot_norm");
}

// One broken rule a row: the struct is refused, and the message names the field, its value and
// the rule.
TEST(PluginFields, EveryBrokenRuleIsRefusedNamingTheField) {
  const char long_name[] = "a_name_of_thirty_three_characters";
  const struct {
    const char* rule;
    std::function<void(colltest_kernel_v1_t&)> breaks;
    const char* message;
  } rows[] = {
      {"abi version", [](auto& k) { k.abi_version = 2; },
       "abi_version = 2: this worker loads version 1"},
      {"struct size", [](auto& k) { k.struct_size = 8; }, "struct_size = 8: must be sizeof"},
      {"name present", [](auto& k) { k.name = nullptr; }, "name = NULL: must be a string"},
      {"name not empty", [](auto& k) { k.name = ""; }, "name = '': must be 1 to 32 characters"},
      {"name length", [&](auto& k) { k.name = long_name; }, "must be 1 to 32 characters"},
      {"name characters", [](auto& k) { k.name = "One-Shot"; },
       "name = 'One-Shot': may hold a-z, 0-9 and _ only"},
      {"version present", [](auto& k) { k.version = nullptr; }, "version = NULL"},
      {"version printable", [](auto& k) { k.version = "1.0\n"; }, "may hold printable ASCII only"},
      {"backends known", [](auto& k) { k.backends = 1u << 5; }, "backends = 0x20: must be"},
      {"backends not empty", [](auto& k) { k.backends = 0; }, "backends = 0x0"},
      {"dtypes known", [](auto& k) { k.dtypes = 1u; }, "dtypes = 0x1: must be"},
      {"worlds known", [](auto& k) { k.world_sizes = 1u << 3; }, "world_sizes = 0x8: must be"},
      {"epilogue none", [](auto& k) { k.epilogues = 1u << COLLTEST_EPILOGUE_NVFP4; },
       "epilogues = 0x10: must hold 1u << COLLTEST_EPILOGUE_NONE"},
      {"epilogues known", [](auto& k) { k.epilogues |= 1u << 7; }, "epilogues = 0x86"},
      {"flags known", [](auto& k) { k.flags = 2; }, "flags = 0x2: version 1 knows"},
      {"reserved zero", [](auto& k) { k.reserved = 1; }, "reserved = 1: must be 0"},
      {"max elements", [](auto& k) { k.max_elements = 0; }, "max_elements = 0: must be at least"},
      {"workspace_bytes", [](auto& k) { k.workspace_bytes = nullptr; },
       "workspace_bytes = NULL: must be a function"},
      {"init", [](auto& k) { k.init = nullptr; }, "init = NULL"},
      {"launch", [](auto& k) { k.launch = nullptr; }, "launch = NULL"},
      {"fini", [](auto& k) { k.fini = nullptr; }, "fini = NULL"},
  };
  for (const auto& row : rows) {
    colltest_kernel_v1_t k = ValidKernel();
    row.breaks(k);
    const absl::Status s = CheckKernelFields(k);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << row.rule;
    EXPECT_THAT(std::string(s.message()), HasSubstr(row.message)) << row.rule;
  }
}

// A private folder under /tmp (sticky, so allowed above it) holding copies of the fixtures.
class PluginFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/colltest-plugins-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Copies fixture `name` (tests/plugins/fixtures) into the folder as `as`, with `mode`.
  std::string Copy(const std::string& name, const std::string& as, mode_t mode = 0755) {
    const fs::path to = fs::path(dir_) / as;
    fs::copy_file(fs::path(COLLTEST_PLUGIN_FIXTURE_DIR) / (name + ".so"), to,
                  fs::copy_options::overwrite_existing);
    chmod(to.c_str(), mode);
    return to.string();
  }
  std::string dir_;
};

std::string Sha256sum(const std::string& path) {
  FILE* pipe = popen(("sha256sum '" + path + "'").c_str(), "r");
  char hex[65] = {};
  if (pipe == nullptr || fread(hex, 1, 64, pipe) != 64) hex[0] = 0;
  if (pipe != nullptr) pclose(pipe);
  return hex;
}

TEST_F(PluginFolder, AValidPluginIsLoadedWithItsFieldsAndTheFilesSha256) {
  const std::string path = Copy("noop_cpu", "noop_cpu.so");
  const PluginLoad load = LoadKernelPlugin(path, COLLTEST_BACKEND_CPU);
  ASSERT_NE(load.plugin, nullptr) << load.report.refused;
  EXPECT_EQ(load.report.refused, "");
  EXPECT_EQ(load.report.name, "noop");
  EXPECT_EQ(load.report.version, "1.0 (fixture)");
  EXPECT_EQ(load.report.world_sizes, (1u << 2) | (1u << 4));
  EXPECT_EQ(load.report.sha256, Sha256sum(path));
  EXPECT_EQ(load.report.sha256.size(), 64u);
  EXPECT_EQ(load.plugin->kernel().arm, nullptr);
  EXPECT_EQ(std::string(load.plugin->kernel().name), "noop");
}

// Rule: plugins loaded together each keep their own struct. The file is loaded as
// /proc/self/fd/N; were the descriptor closed after dlopen, the next plugin opened under the same
// N would be taken by the dynamic loader for the first one.
TEST_F(PluginFolder, PluginsLoadedTogetherKeepTheirOwnStructs) {
  const PluginLoad a = LoadKernelPlugin(Copy("noop_cpu", "a.so"), COLLTEST_BACKEND_CPU);
  const PluginLoad b = LoadKernelPlugin(Copy("sums_wrong", "b.so"), COLLTEST_BACKEND_CPU);
  const PluginLoad c = LoadKernelPlugin(Copy("no_graph", "c.so"), COLLTEST_BACKEND_CPU);
  ASSERT_NE(a.plugin, nullptr) << a.report.refused;
  ASSERT_NE(b.plugin, nullptr) << b.report.refused;
  ASSERT_NE(c.plugin, nullptr) << c.report.refused;
  EXPECT_EQ(a.report.name, "noop");
  EXPECT_EQ(b.report.name, "sums_wrong");
  EXPECT_EQ(std::string(b.plugin->kernel().name), "sums_wrong");
  EXPECT_EQ(std::string(c.plugin->kernel().name), "no_graph");
}

TEST_F(PluginFolder, AnotherBackendsPluginIsRefusedNamingTheBackend) {
  const PluginLoad load = LoadKernelPlugin(Copy("noop_cpu", "noop_cpu.so"), COLLTEST_BACKEND_CUDA);
  EXPECT_EQ(load.plugin, nullptr);
  EXPECT_EQ(load.report.refused, "backends = 0x1: does not list this worker's backend (cuda)");
  EXPECT_EQ(load.report.name, "noop");  // read, and reported
}

TEST_F(PluginFolder, AWrongAbiVersionIsRefusedBeforeAnyOtherField) {
  const PluginLoad load = LoadKernelPlugin(Copy("wrong_abi", "wrong_abi.so"), COLLTEST_BACKEND_CPU);
  EXPECT_EQ(load.plugin, nullptr);
  EXPECT_EQ(load.report.refused, "abi_version = 2: this worker loads version 1");
  EXPECT_EQ(load.report.sha256.size(), 64u);
  EXPECT_EQ(load.report.name, "");
}

TEST_F(PluginFolder, ALibraryWithoutTheSymbolIsRefused) {
  const PluginLoad load = LoadKernelPlugin(Copy("no_symbol", "no_symbol.so"), COLLTEST_BACKEND_CPU);
  EXPECT_EQ(load.plugin, nullptr);
  EXPECT_THAT(load.report.refused, HasSubstr("exports no colltest_kernel_v1"));
}

TEST_F(PluginFolder, NotALibraryIsRefusedByTheLoader) {
  const std::string path = dir_ + "/text.so";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("not an ELF file\n", f);
  fclose(f);
  const PluginLoad load = LoadKernelPlugin(path, COLLTEST_BACKEND_CPU);
  EXPECT_EQ(load.plugin, nullptr);
  EXPECT_THAT(load.report.refused, HasSubstr("dlopen: "));
}

// As sshd's StrictModes: what others may write, others may replace.
TEST_F(PluginFolder, LooseFilesAndFoldersAreRefusedNamingWhatIsLoose) {
  EXPECT_THAT(LoadKernelPlugin(Copy("noop_cpu", "a.so", 0757), COLLTEST_BACKEND_CPU).report.refused,
              HasSubstr("a.so is writable by others (mode 0757); only its owner may write it"));
  EXPECT_THAT(LoadKernelPlugin(Copy("noop_cpu", "b.so", 0775), COLLTEST_BACKEND_CPU).report.refused,
              HasSubstr("b.so is writable by its group (mode 0775)"));
  const std::string inner = dir_ + "/open";
  ASSERT_EQ(mkdir(inner.c_str(), 0755), 0);
  const std::string path = inner + "/c.so";
  fs::copy_file(Copy("noop_cpu", "c.so"), path);
  EXPECT_NE(LoadKernelPlugin(path, COLLTEST_BACKEND_CPU).plugin, nullptr);
  chmod(inner.c_str(), 0777);
  EXPECT_THAT(LoadKernelPlugin(path, COLLTEST_BACKEND_CPU).report.refused,
              HasSubstr("the folder " + inner + " of kernel plugin " + path +
                        " is writable by others (mode 0777)"));
  chmod(inner.c_str(), 01777);  // sticky: nobody else can replace c.so
  EXPECT_NE(LoadKernelPlugin(path, COLLTEST_BACKEND_CPU).plugin, nullptr);
}

TEST_F(PluginFolder, ASymbolicLinkIsRefused) {
  const std::string target = Copy("noop_cpu", "real.so");
  const std::string link = dir_ + "/link.so";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_THAT(LoadKernelPlugin(link, COLLTEST_BACKEND_CPU).report.refused,
              HasSubstr("(a symbolic link)"));
}

TEST_F(PluginFolder, AFileOfAnotherUserIsRefused) {
  const std::string path = Copy("noop_cpu", "other.so");
  if (geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  ASSERT_EQ(chown(path.c_str(), 12345, 0), 0);
  EXPECT_THAT(LoadKernelPlugin(path, COLLTEST_BACKEND_CPU).report.refused,
              HasSubstr("is owned by uid 12345; only root (uid 0) or this worker's user"));
}

}  // namespace
}  // namespace colltest::worker::plugins
