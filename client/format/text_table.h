// A column-aligned plain-text table for terminal output.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace colltest::client {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    // A title with a '\n' takes two header lines ("time\n(us)"), so a unit needs no width of its
    // own; the lines of every title are aligned as the column's cells.
    std::string title;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns);

  // Missing trailing cells render empty; extra cells are dropped. Every cell is escaped with
  // common::EscapeForTerminal (control characters and invalid UTF-8 as \xNN).
  void AddRow(std::vector<std::string> cells);

  // Keeps every line within `width` columns by cutting the cells of column `column` (ending them
  // with "..."), but never below `min_width`: the other columns are the data, this one (a message)
  // the commentary. Lines can still exceed `width` when the other columns alone are wider.
  void FitTo(size_t width, size_t column, size_t min_width);

  // Header, then one line per row, columns separated by two spaces, no trailing blanks.
  std::string Render() const;

 private:
  std::vector<size_t> Widths() const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
  size_t fit_width_ = 0;  // 0: no limit
  size_t fit_column_ = 0;
  size_t fit_min_width_ = 0;
};

// The columns `text` takes on a terminal: one per code point (UTF-8 continuation bytes take none).
size_t DisplayWidth(absl::string_view text);

// `text` cut to at most `width` columns, ending with "..." where it was cut, and never in the
// middle of a UTF-8 sequence.
std::string CutToWidth(absl::string_view text, size_t width);

}  // namespace colltest::client
