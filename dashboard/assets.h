// The dashboard's files (dashboard/web/), compiled into colltestd so that the page works offline
// and the binary is the whole installation. docs/dashboard.md.
#pragma once

#include <string_view>

namespace colltest::dashboard {

struct Asset {
  std::string_view path;          // "/index.html", "/app.js", "/vendor/uPlot.iife.min.js", ...
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view body;
};

// The asset served at `path`; "/" is "/index.html". nullptr when there is none.
const Asset* FindAsset(std::string_view path);

}  // namespace colltest::dashboard
