#include "worker/plugins/plugin_fields.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace colltest::worker::plugins {
namespace {

absl::Status Refused(const char* field, const std::string& value, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", value, ": ", rule));
}

std::string Hex(uint64_t bits) { return absl::StrFormat("0x%x", bits); }

// A C string of 1 to `max` bytes, every byte allowed by `ok`; read at most max + 1 bytes.
template <typename Allowed>
absl::Status CheckString(const char* field, const char* text, size_t max, Allowed ok,
                         const char* rule) {
  if (text == nullptr) return Refused(field, "NULL", "must be a string");
  const size_t length = strnlen(text, max + 1);
  const std::string shown(text, length);
  if (length == 0 || length > max) {
    return Refused(field, absl::StrCat("'", shown, length > max ? "...'" : "'"),
                   absl::StrCat("must be 1 to ", max, " characters"));
  }
  for (char c : shown) {
    if (!ok(c)) return Refused(field, absl::StrCat("'", shown, "'"), rule);
  }
  return absl::OkStatus();
}

// A mask that is not empty and holds only known bits (and `required`, when given).
absl::Status CheckMask(const char* field, uint32_t mask, uint32_t known, uint32_t required,
                       const char* rule) {
  if (mask == 0 || (mask & ~known) != 0 || (mask & required) != required) {
    return Refused(field, Hex(mask), rule);
  }
  return absl::OkStatus();
}

absl::Status CheckMasks(const colltest_kernel_v1_t& k) {
  COLLTEST_RETURN_IF_ERROR(
      CheckMask("backends", k.backends, kKnownBackends, 0,
                "must be a non-empty set of COLLTEST_BACKEND_CPU, _CUDA and _HIP"));
  COLLTEST_RETURN_IF_ERROR(
      CheckMask("dtypes", k.dtypes, kKnownDtypes, 0,
                "must be a non-empty set of 1u << COLLTEST_DTYPE_BF16, _FP16, _FP32"));
  COLLTEST_RETURN_IF_ERROR(CheckMask("world_sizes", k.world_sizes, kKnownWorlds, 0,
                                     "must be a non-empty set of 1u << 2, 1u << 4 and 1u << 8"));
  COLLTEST_RETURN_IF_ERROR(
      CheckMask("epilogues", k.epilogues, kKnownEpilogues, 1u << COLLTEST_EPILOGUE_NONE,
                "must hold 1u << COLLTEST_EPILOGUE_NONE and only known epilogues"));
  if ((k.flags & ~kKnownFlags) != 0) {
    return Refused("flags", Hex(k.flags), "version 1 knows COLLTEST_KERNEL_GRAPH_CAPTURE only");
  }
  return absl::OkStatus();
}

absl::Status CheckEntryPoints(const colltest_kernel_v1_t& k) {
  // arm may be NULL (nothing to arm); the others are every group's and every call's.
  const struct {
    const char* field;
    bool present;
  } required[] = {{"workspace_bytes", k.workspace_bytes != nullptr},
                  {"init", k.init != nullptr},
                  {"launch", k.launch != nullptr},
                  {"fini", k.fini != nullptr}};
  for (const auto& entry : required) {
    if (!entry.present) return Refused(entry.field, "NULL", "must be a function");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckKernelFields(const colltest_kernel_v1_t& k) {
  if (k.abi_version != COLLTEST_KERNEL_ABI_VERSION) {
    return Refused("abi_version", absl::StrCat(k.abi_version),
                   absl::StrCat("this worker loads version ", COLLTEST_KERNEL_ABI_VERSION));
  }
  if (k.struct_size != sizeof(colltest_kernel_v1_t)) {
    return Refused("struct_size", absl::StrCat(k.struct_size),
                   absl::StrCat("must be sizeof(colltest_kernel_v1_t) = ",
                                sizeof(colltest_kernel_v1_t), " for version 1"));
  }
  const auto name_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  COLLTEST_RETURN_IF_ERROR(
      CheckString("name", k.name, kMaxNameLength, name_char, "may hold a-z, 0-9 and _ only"));
  const auto printable = [](char c) { return c >= 0x20 && c < 0x7f; };
  COLLTEST_RETURN_IF_ERROR(CheckString("version", k.version, kMaxVersionLength, printable,
                                       "may hold printable ASCII only"));
  COLLTEST_RETURN_IF_ERROR(CheckMasks(k));
  if (k.reserved != 0) return Refused("reserved", absl::StrCat(k.reserved), "must be 0");
  if (k.max_elements == 0) return Refused("max_elements", "0", "must be at least 1 (m x n)");
  return CheckEntryPoints(k);
}

std::string PluginVariantName(const colltest_kernel_v1_t& kernel) {
  return absl::StrCat("plugin:", kernel.name);
}

}  // namespace colltest::worker::plugins
