#include "worker/plugins/kernel_plugin.h"

#include <dlfcn.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/plugins/plugin_fields.h"
#include "worker/plugins/plugin_file.h"

namespace colltest::worker::plugins {
namespace {

const char* BackendName(uint32_t backend) {
  switch (backend) {
    case COLLTEST_BACKEND_CPU:
      return "cpu";
    case COLLTEST_BACKEND_CUDA:
      return "cuda";
    case COLLTEST_BACKEND_HIP:
      return "hip";
  }
  return "unknown";
}

void CopyFields(const colltest_kernel_v1_t& k, PluginReport& report) {
  report.name = k.name;
  report.version = k.version;
  report.backends = k.backends;
  report.dtypes = k.dtypes;
  report.world_sizes = k.world_sizes;
  report.epilogues = k.epilogues;
  report.flags = k.flags;
  report.max_elements = k.max_elements;
}

// The exported struct of an open library, checked field by field.
absl::StatusOr<const colltest_kernel_v1_t*> ExportedKernel(void* handle) {
  dlerror();
  void* symbol = dlsym(handle, COLLTEST_KERNEL_SYMBOL_V1);
  if (symbol == nullptr) {
    const char* error = dlerror();
    return absl::NotFoundError(absl::StrCat("exports no ", COLLTEST_KERNEL_SYMBOL_V1, " (",
                                            error != nullptr ? error : "a null symbol", ")"));
  }
  const auto* kernel = static_cast<const colltest_kernel_v1_t*>(symbol);
  // abi_version first: a struct of another version may be shorter than version 1's.
  if (absl::Status fields = CheckKernelFields(*kernel); !fields.ok()) return fields;
  return kernel;
}

}  // namespace

KernelPlugin::~KernelPlugin() {
  if (handle_ != nullptr) dlclose(handle_);
}

PluginLoad LoadKernelPlugin(const std::string& path, uint32_t backend) {
  PluginLoad load;
  load.report.path = path;
  absl::StatusOr<PluginFile> file = OpenPluginFile(path);
  if (!file.ok()) {
    load.report.refused = std::string(file.status().message());
    return load;
  }
  load.report.sha256 = file->sha256;
  // RTLD_LOCAL: two plugins may define the same symbols; RTLD_NOW: an unresolved symbol refuses
  // the plugin here, not in the middle of a case.
  void* handle = dlopen(LoadPath(*file).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    load.report.refused = absl::StrCat("dlopen: ", error != nullptr ? error : "failed");
    return load;
  }
  absl::StatusOr<const colltest_kernel_v1_t*> kernel = ExportedKernel(handle);
  if (!kernel.ok()) {
    dlclose(handle);
    load.report.refused = std::string(kernel.status().message());
    return load;
  }
  CopyFields(**kernel, load.report);
  if ((load.report.backends & backend) == 0) {
    // From the report: the struct goes with the library.
    dlclose(handle);
    load.report.refused =
        absl::StrCat("backends = 0x", absl::Hex(load.report.backends),
                     ": does not list this worker's backend (", BackendName(backend), ")");
    return load;
  }
  load.plugin = std::make_unique<KernelPlugin>(std::move(file->fd), handle, *kernel, load.report);
  return load;
}

}  // namespace colltest::worker::plugins
