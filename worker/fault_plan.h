// Fault injection for a case (docs/design.md section 7), parsed from CaseRequest.fault with the
// shared fault grammar (common/fault_spec.h). colltestd checks a fault up front and forwards it
// only when started with --allow-fault-injection; the worker parses it again because it must know
// what to do.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/fault_spec.h"

namespace colltest::worker {

struct FaultPlan {
  // The kinds and their grammar are documented in common/fault_spec.h.
  using Kind = common::FaultKind;
  Kind kind = Kind::kNone;
  int rank = -1;  // -1: every rank
  uint32_t delay_us = 0;

  bool Targets(uint32_t r) const { return rank < 0 || static_cast<uint32_t>(rank) == r; }
};

absl::StatusOr<FaultPlan> ParseFault(const std::string& spec, uint32_t world);

// Test only: COLLTEST_TEST_FAULT=KIND[:RANK] in a worker's environment (colltestd passes its own
// on) is injected into every case that carries no fault of its own, whatever the server allows:
// a node that is broken by itself, for tests of fleet checks and node-problem-detector rules
// where one request goes to many nodes. "" when unset; set, the worker says so on stderr once.
const std::string& StandingTestFault();

}  // namespace colltest::worker
