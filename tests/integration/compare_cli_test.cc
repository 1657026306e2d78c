// `history`, `baseline` and `compare`, and `run --compare-baseline`, through the colltest CLI
// against a real cpu-backend colltestd. Timings of the cpu backend are noise, so the verdicts
// checked here do not depend on them: a threshold of 1000 % keeps every timed case SAME, and a
// regression is made by dropping a case.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

class CompareCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(4).release();
    ASSERT_NE(daemon_, nullptr);
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  static std::pair<int, std::string> Colltest(std::vector<std::string> args) {
    args.insert(args.begin(), {BinDir() + "/colltest", "--server", daemon_->address()});
    return RunCommand(args);
  }

  // Runs `args` with --format json --out FILE and returns the exit code and the document, so that
  // stderr (progress, the comparison's one line) cannot get in the way of the parse.
  static std::pair<int, nlohmann::json> ColltestJson(std::vector<std::string> args,
                                                     std::string* output = nullptr) {
    const std::string path = ::testing::TempDir() + "/compare_cli.json";
    std::remove(path.c_str());
    args.insert(args.end(), {"--format", "json", "--out", path});
    auto [code, out] = Colltest(args);
    if (output != nullptr) *output = out;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return {code, text.str().empty() ? nlohmann::json() : nlohmann::json::parse(text.str())};
  }

  // A two-variant run labelled `label`, made the baseline `name` of the daemon's machine.
  static std::string MakeBaseline(const std::string& label, const std::string& name) {
    auto [code, run] = ColltestJson({"run", "--world", "2", "--m", "1", "--n", "1024", "--modes",
                                     "eager", "--variants", "lamport,one_stage", "--label", label});
    EXPECT_EQ(code, 0) << run.dump();
    const std::string id = run.value("run_id", "");
    auto [set_code, set_out] = Colltest({"baseline", "set", id, "--name", name});
    EXPECT_EQ(set_code, 0) << set_out;
    EXPECT_NE(set_out.find("baseline " + name + " of "), std::string::npos) << set_out;
    EXPECT_NE(set_out.find(" = " + id), std::string::npos) << set_out;
    return id;
  }

  static Daemon* daemon_;
};
Daemon* CompareCli::daemon_ = nullptr;

TEST_F(CompareCli, ARunComparedWithItselfIsClean) {
  const std::string id = MakeBaseline("self", "self");
  auto [code, out] = Colltest({"compare", id, id});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\nno regression in 2 cases\n"), std::string::npos) << out;
  auto [json_code, json] = ColltestJson({"compare", id, "--baseline", "self"});
  EXPECT_EQ(json_code, 0) << json.dump();
  EXPECT_EQ(json["run_a"], id);
  EXPECT_EQ(json["baseline"], "self");
  EXPECT_EQ(json["regressed"], false);
  ASSERT_EQ(json["cases"].size(), 2u);
  EXPECT_EQ(json["cases"][0]["verdict"], "SAME");
  EXPECT_EQ(json["cases"][0]["ratio"], 1.0);
}

TEST_F(CompareCli, RunWithCompareBaselineEmbedsTheComparison) {
  const std::string base = MakeBaseline("embed", "embed");
  auto [code, doc] = ColltestJson({"run", "--world", "2", "--m", "1", "--n", "1024", "--modes",
                                   "eager", "--variants", "lamport,one_stage", "--compare-baseline",
                                   "embed", "--compare-threshold", "1000%"});
  EXPECT_EQ(code, 0) << doc.dump();
  EXPECT_EQ(doc["cases"].size(), 2u);
  EXPECT_EQ(doc["comparison"]["run_a"], base);
  EXPECT_EQ(doc["comparison"]["run_b"], doc["run_id"]);
  EXPECT_EQ(doc["comparison"]["regressed"], false);
  EXPECT_DOUBLE_EQ(doc["comparison"]["threshold"].get<double>(), 10.0);
}

TEST_F(CompareCli, ADroppedCaseIsARegressionExitFour) {
  MakeBaseline("dropped", "dropped");
  std::string output;
  auto [code, doc] = ColltestJson(
      {"run", "--world", "2", "--m", "1", "--n", "1024", "--modes", "eager", "--variants",
       "lamport", "--compare-baseline", "dropped", "--compare-threshold", "1000%"},
      &output);
  EXPECT_EQ(code, 4) << output;
  EXPECT_EQ(doc["comparison"]["regressed"], true);
  bool only_a = false;
  for (const auto& c : doc["comparison"]["cases"]) {
    if (c["variant"] == "one_stage") only_a = c["verdict"] == "ONLY_A";
  }
  EXPECT_TRUE(only_a) << doc["comparison"].dump();
  EXPECT_NE(output.find(" of 2 cases regressed (worst: "), std::string::npos) << output;
}

TEST_F(CompareCli, AMissingBaselineIsExitThreeNamingIt) {
  auto [code, out] = Colltest({"run", "--world", "2", "--m", "1", "--n", "1024", "--modes", "eager",
                               "--variants", "lamport", "--compare-baseline", "no-such-baseline"});
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("NOT_FOUND"), std::string::npos) << out;
  EXPECT_NE(out.find("no-such-baseline"), std::string::npos) << out;
  // The run itself was still reported.
  EXPECT_NE(out.find("state DONE"), std::string::npos) << out;
}

TEST_F(CompareCli, HistoryFiltersAndFollowsPages) {
  for (int i = 0; i < 3; ++i) {
    auto [code, out] = Colltest({"run", "--world", "2", "--m", "1", "--n", "1024", "--modes",
                                 "eager", "--variants", "lamport", "--label", "paged-history"});
    ASSERT_EQ(code, 0) << out;
  }
  auto [code, page] = ColltestJson({"history", "--label", "paged-history", "--limit", "2"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(page["runs"].size(), 2u);
  EXPECT_NE(page["next_page_token"], "");
  auto [all_code, all] =
      ColltestJson({"history", "--label", "paged-history", "--limit", "1", "--all"});
  EXPECT_EQ(all_code, 0);
  ASSERT_EQ(all["runs"].size(), 3u);
  EXPECT_EQ(all["next_page_token"], "");
  for (const auto& r : all["runs"]) {
    EXPECT_EQ(r["label"], "paged-history");
    EXPECT_EQ(r["state"], "DONE");
  }
  auto [none_code, none] =
      ColltestJson({"history", "--label", "paged-history", "--state", "interrupted"});
  EXPECT_EQ(none_code, 0);
  EXPECT_EQ(none["runs"].size(), 0u);
  auto [since_code, since] = ColltestJson(
      {"history", "--label", "paged-history", "--since", "1h", "--variant", "lamport"});
  EXPECT_EQ(since_code, 0);
  EXPECT_EQ(since["runs"].size(), 3u);
}

TEST_F(CompareCli, BaselineListNamesTheRun) {
  const std::string id = MakeBaseline("listed", "listed");
  auto [code, json] = ColltestJson({"baseline", "list"});
  EXPECT_EQ(code, 0);
  bool found = false;
  for (const auto& b : json["baselines"])
    found = found || (b["name"] == "listed" && b["run_id"] == id);
  EXPECT_TRUE(found) << json.dump();
}

}  // namespace
}  // namespace colltest::testing
