// Test-only switches that break one protocol rule each, so the test suite can prove that it
// catches the breakage (a wrong result or a detected hang). In-process tests set them in
// CpuBackendOptions; only the test build of the worker, colltest-worker-breaks, reads them from
// the environment (protocol_breaks_env.h). The production colltest-worker cannot set them.
#pragma once

#include <string>

namespace colltest::cpu {

struct ProtocolBreaks {
  bool skip_canonicalize = false;     // producers store -0.0 as is
  bool float_compare = false;         // consumers compare the sentinel as a float, not as bits
  bool skip_rearm = false;            // consumers leave consumed packs un-armed
  bool relaxed_barriers = false;      // barriers publish with relaxed stores (no release)
  bool shared_staging = false;        // lamport stages through the general tmp region
  bool two_buffer_rotation = false;   // lamport_tb rotates over two buffers instead of three
  bool skip_end_sync = false;         // blocks leave without their end barrier (a hung rank)
  bool rank_dependent_grid = false;   // the grid grows with the rank (not the same on every rank)
  bool divergent_trip_count = false;  // one block runs one more trip around a barrier

  bool any() const {
    return skip_canonicalize || float_compare || skip_rearm || relaxed_barriers || shared_staging ||
           two_buffer_rotation || skip_end_sync || rank_dependent_grid || divergent_trip_count;
  }
};

// Parses "canonicalize,bit_compare,rearm,release_acquire,private_staging,rotation,same_grid,
// uniform_trips" (each names the rule it breaks); unknown names are an error so that a typo
// cannot make a mutation test pass vacuously.
bool ParseProtocolBreaks(const std::string& spec, ProtocolBreaks* out, std::string* error);

}  // namespace colltest::cpu
