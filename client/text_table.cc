#include "client/text_table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/text.h"

namespace colltest::client {

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  // Cells carry text from the server (labels, messages) that other clients wrote: escaped, so
  // that none can move the terminal's cursor, clear it, or break a row in two.
  for (std::string& cell : cells) cell = common::EscapeForTerminal(cell);
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = columns_[c].title.size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  auto append_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line += "  ";
      const size_t pad = widths[c] - cells[c].size();
      if (columns_[c].align == Align::kRight) line.append(pad, ' ');
      line += cells[c];
      if (columns_[c].align == Align::kLeft) line.append(pad, ' ');
    }
    // Trailing blanks come from a short left-aligned last column; they only upset diffs.
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line));
    out += '\n';
  };
  std::vector<std::string> header;
  for (const Column& column : columns_) header.push_back(column.title);
  append_line(header);
  for (const auto& row : rows_) append_line(row);
  return out;
}

}  // namespace colltest::client
