// Reading Metrics::Render() in tests: a scrape as series -> value, and series names built from a
// label map the way prometheus-cpp writes them (labels sorted by name), so that a test states
// labels without sorting them by hand.
#pragma once

#include <map>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "server/runs/metrics.h"

namespace colltest::server::metrics_test_support {

// Render() as series -> value, e.g. `colltest_runs{state="queued"}` -> 3. Comments are skipped.
inline std::map<std::string, double> Series(const std::string& text) {
  std::map<std::string, double> series;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    if (space == std::string::npos || !absl::SimpleAtod(line.substr(space + 1), &value)) {
      ADD_FAILURE() << "unparsable line: " << line;
      continue;
    }
    series[line.substr(0, space)] = value;
  }
  return series;
}

// The value of one series, or -1 when the scrape lacks it (every value here is >= 0).
inline double Value(const Metrics& metrics, const std::string& name) {
  const auto series = Series(metrics.Render());
  auto it = series.find(name);
  return it == series.end() ? -1 : it->second;
}

// `name{a="x",b="y"}`, the labels in std::map's order, which is the order a scrape shows.
inline std::string Named(const std::string& name,
                         const std::map<std::string, std::string>& labels) {
  return absl::StrCat(name, "{",
                      absl::StrJoin(labels, ",",
                                    [](std::string* out, const auto& label) {
                                      absl::StrAppend(out, label.first, "=\"", label.second, "\"");
                                    }),
                      "}");
}

}  // namespace colltest::server::metrics_test_support
