// JSON building blocks shared by the client's formatters, so that a run printed alone and a run
// printed with its comparison have one shape. Internal to colltest_client_lib: it exposes
// nlohmann::json, which the library links privately.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"
#include "nlohmann/json.hpp"

namespace colltest::client {

// Insertion order keeps the output readable: identity first, numbers next, details last.
using Json = nlohmann::ordered_json;

// The version of every JSON document the client prints (client/schema/colltest-output.schema.json,
// docs/output-formats.md): raised only when a field is renamed or removed or changes meaning;
// fields are added without raising it.
inline constexpr int kSchemaVersion = 1;

// The object every JSON document starts from: {"schema_version": 1, "kind": kind}, kind naming the
// document ("colltest.run", "colltest.health", ...) so that a reader can tell them apart.
Json DocumentJson(absl::string_view kind);

// Indented, one trailing newline. Invalid UTF-8 in a message is replaced rather than thrown on:
// a report must always come out.
std::string DumpJson(const Json& json);

// The object FormatRunJson prints.
Json RunJson(const v1::RunResult& run);

// A run's machine (MachineIdentity): devices with their UUID and bus id, and the links.
Json MachineJson(const v1::MachineIdentity& machine);

// {"name", "version", "sha256"}: the build of a kernel plugin a case ran.
Json PluginJson(const v1::PluginIdentity& plugin);

// The object FormatCompareJson prints.
Json CompareJson(const v1::CompareResponse& comparison);

}  // namespace colltest::client
