// nccl-tests' short flags and names on colltest's command line: -n iters, -w warm-up, -d dtype
// (nccl-tests' names too), -c check; --hidden for the hidden size with --n as its alias.
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "client/cli.h"
#include "client/flags/flags.h"
#include "client/flags/nccl_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::HasSubstr;

// The spec `colltest ARGS` sends, or the parse's failure.
absl::StatusOr<v1::SweepSpec> SpecOf(std::vector<std::string> args) {
  args.insert(args.begin(), "colltest");
  std::ostringstream out, err;
  std::variant<Invocation, int> parsed = ParseCommandLine(args, out, err);
  if (!std::holds_alternative<Invocation>(parsed)) return absl::InvalidArgumentError(err.str());
  const Invocation& inv = std::get<Invocation>(parsed);
  return inv.command == "tune" ? BuildTuneSpec(inv.tune) : BuildSweepSpec(inv.sweep);
}

TEST(NcclFlagsTest, ShortFlagsMeanWhatNcclTestsMeans) {
  for (const std::string command : {"run", "sweep"}) {
    absl::StatusOr<v1::SweepSpec> spec =
        SpecOf({command, "-n", "50", "-w", "3", "-d", "half", "-c", "1", "--hidden", "4096"});
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->iters(), 50u);
    EXPECT_EQ(spec->warmup(), 3u);
    EXPECT_EQ(spec->dtype(), v1::DTYPE_FP16);
    ASSERT_EQ(spec->n_size(), 1);
    EXPECT_EQ(spec->n(0), 4096u);
  }
}

TEST(NcclFlagsTest, TuneTakesTheShortFlagsToo) {
  absl::StatusOr<v1::SweepSpec> spec =
      SpecOf({"tune", "--world", "2", "-n", "9", "-w", "2", "-d", "float", "--hidden", "1024"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->iters(), 9u);
  EXPECT_EQ(spec->warmup(), 2u);
  EXPECT_EQ(spec->dtype(), v1::DTYPE_FP32);
  EXPECT_EQ(spec->n(0), 1024u);
}

TEST(NcclFlagsTest, DoubleDashNIsTheHiddenSize) {
  absl::StatusOr<v1::SweepSpec> alias = SpecOf({"sweep", "--n", "4096,7168"});
  absl::StatusOr<v1::SweepSpec> hidden = SpecOf({"sweep", "--hidden", "4096,7168"});
  ASSERT_TRUE(alias.ok()) << alias.status();
  ASSERT_TRUE(hidden.ok()) << hidden.status();
  EXPECT_EQ(alias->SerializeAsString(), hidden->SerializeAsString());
  EXPECT_EQ(alias->n_size(), 2);
  EXPECT_EQ(alias->iters(), 0u);  // the server's default, untouched by --n
}

TEST(NcclFlagsTest, DtypeTakesBothSpellings) {
  const std::vector<std::pair<std::string, v1::DType>> names = {
      {"bf16", v1::DTYPE_BF16},  {"bfloat16", v1::DTYPE_BF16}, {"fp16", v1::DTYPE_FP16},
      {"half", v1::DTYPE_FP16},  {"float16", v1::DTYPE_FP16},  {"fp32", v1::DTYPE_FP32},
      {"float", v1::DTYPE_FP32}, {"FLOAT32", v1::DTYPE_FP32}};
  for (const auto& [name, dtype] : names) {
    EXPECT_EQ(ParseDTypeOrNcclName(name), dtype) << name;
    absl::StatusOr<v1::SweepSpec> spec = SpecOf({"sweep", "--dtype", name});
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_EQ(spec->dtype(), dtype) << name;
  }
}

TEST(NcclFlagsTest, DtypesColltestDoesNotRunAreRefused) {
  for (const std::string name : {"int8", "double", "all"}) {
    absl::StatusOr<v1::SweepSpec> spec = SpecOf({"sweep", "-d", name});
    ASSERT_FALSE(spec.ok()) << name;
    EXPECT_THAT(spec.status().message(), HasSubstr("--dtype: ")) << name;
    EXPECT_THAT(spec.status().message(), HasSubstr("bfloat16, half or float")) << name;
  }
}

TEST(NcclFlagsTest, CheckOneIsTheDefaultAndTheRestIsRefused) {
  absl::StatusOr<v1::SweepSpec> one = SpecOf({"sweep", "-c", "1"});
  absl::StatusOr<v1::SweepSpec> none = SpecOf({"sweep"});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->SerializeAsString(), none->SerializeAsString());

  absl::StatusOr<v1::SweepSpec> off = SpecOf({"sweep", "-c", "0"});
  ASSERT_FALSE(off.ok());
  EXPECT_THAT(off.status().message(), HasSubstr("--check: '0': colltest has no unchecked case"));
  absl::StatusOr<v1::SweepSpec> many = SpecOf({"sweep", "--check", "5"});
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(many.status().message(), HasSubstr("use --stress N"));
  EXPECT_FALSE(SpecOf({"sweep", "-c", "yes"}).ok());
}

TEST(NcclFlagsTest, HelpNamesHiddenWithItsAlias) {
  std::ostringstream out, err;
  ParseCommandLine({"colltest", "sweep", "--help"}, out, err);
  EXPECT_THAT(out.str(), HasSubstr("--hidden,--n"));
  EXPECT_THAT(out.str(), HasSubstr("-n,--iters"));
  EXPECT_THAT(out.str(), HasSubstr("-w,--warmup"));
  EXPECT_THAT(out.str(), HasSubstr("-d,--dtype"));
  EXPECT_THAT(out.str(), HasSubstr("-c,--check"));
}

}  // namespace
}  // namespace colltest::client
