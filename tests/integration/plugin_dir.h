// A private folder of kernel plugin fixture copies for colltestd --kernel-plugin-dir: 0700 under
// /tmp (whose sticky bit the plugin rules accept), removed with the object.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace colltest::testing {

class PluginDir {
 public:
  PluginDir() {
    char pattern[] = "/tmp/colltest-plugin-dir-XXXXXX";
    if (mkdtemp(pattern) != nullptr) path_ = pattern;
  }
  ~PluginDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  PluginDir(const PluginDir&) = delete;
  PluginDir& operator=(const PluginDir&) = delete;

  // Copies fixture `fixture` (COLLTEST_PLUGIN_FIXTURE_DIR/<fixture>.so) in as `as` with `mode`.
  std::string Add(const std::string& fixture, const std::string& as,
                  std::filesystem::perms mode = kMode) {
    const std::filesystem::path to = std::filesystem::path(path_) / as;
    std::filesystem::copy_file(
        std::filesystem::path(COLLTEST_PLUGIN_FIXTURE_DIR) / (fixture + ".so"), to,
        std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(to, mode);
    return to.string();
  }
  const std::string& path() const { return path_; }

  // rwxr-xr-x: what the plugin rules accept.
  static constexpr std::filesystem::perms kMode =
      std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
      std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
      std::filesystem::perms::others_exec;

 private:
  std::string path_;
};

}  // namespace colltest::testing
