// Test-only switches that break one protocol rule each, so the test suite can prove that it
// catches the breakage (a wrong result or a detected hang). Read once from the environment
// variable COLLTEST_BREAK_PROTOCOL (comma-separated names); never set in production.
#pragma once

#include <string>

namespace colltest::cpu {

struct ProtocolBreaks {
  bool skip_canonicalize = false;    // producers store -0.0 as is
  bool float_compare = false;        // consumers compare the sentinel as a float, not as bits
  bool skip_rearm = false;           // consumers leave consumed packs un-armed
  bool relaxed_barriers = false;     // barriers publish with relaxed stores (no release)
  bool shared_staging = false;       // lamport stages through the general tmp region
  bool two_buffer_rotation = false;  // lamport_tb rotates over two buffers instead of three
  bool skip_end_sync = false;        // blocks leave without their end barrier (a hung rank)

  bool any() const {
    return skip_canonicalize || float_compare || skip_rearm || relaxed_barriers || shared_staging ||
           two_buffer_rotation || skip_end_sync;
  }
};

// Parses "canonicalize,bit_compare,rearm,release_acquire,private_staging,rotation"; unknown names
// are an error so that a typo cannot make a mutation test pass vacuously.
bool ParseProtocolBreaks(const std::string& spec, ProtocolBreaks* out, std::string* error);
const ProtocolBreaks& ActiveProtocolBreaks();

}  // namespace colltest::cpu
