// What the files of colltestd's metrics share (metrics.cc, metrics_health.cc): status labels,
// one-hot state sets and family builders. Internal to colltest_server_runs.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "absl/strings/ascii.h"
#include "colltest/v1/colltest.pb.h"
#include "common/names.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace colltest::server::metrics_common {

// Every case status a verdict can have, each a series of the families labelled `status`.
inline constexpr std::array<colltest::v1::CaseStatus, 5> kStatuses = {
    colltest::v1::CASE_STATUS_OK, colltest::v1::CASE_STATUS_WRONG, colltest::v1::CASE_STATUS_HANG,
    colltest::v1::CASE_STATUS_ERROR, colltest::v1::CASE_STATUS_UNSUPPORTED};

// Label values are the lower-case short names a user types ("lamport_tb", "hang"), so a query
// reads like a command line.
inline std::string StatusLabel(colltest::v1::CaseStatus s) {
  return absl::AsciiStrToLower(common::CaseStatusName(s));
}

// Sets the gauge of `current` to 1 and the others to 0 (a state set as Prometheus models it); a
// `current` outside `states` leaves every gauge at 0.
template <typename State, size_t N>
void SetOneHot(const std::array<prometheus::Gauge*, N>& gauges, const std::array<State, N>& states,
               State current) {
  for (size_t i = 0; i < N; ++i) gauges[i]->Set(states[i] == current ? 1 : 0);
}

// A family of gauges or counters named `name`, registered in `registry`.
inline prometheus::Family<prometheus::Gauge>& Gauges(prometheus::Registry& registry,
                                                     const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}
inline prometheus::Family<prometheus::Counter>& Counters(prometheus::Registry& registry,
                                                         const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

}  // namespace colltest::server::metrics_common
