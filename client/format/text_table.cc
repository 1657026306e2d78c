#include "client/format/text_table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/text.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kCutMark = "...";

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

size_t DisplayWidth(absl::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !IsContinuationByte(c); }));
}

std::string CutToWidth(absl::string_view text, size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  if (width <= kCutMark.size()) return std::string(kCutMark.substr(0, width));
  // Keep `width - 3` code points: stop at the byte that would start one more.
  size_t kept = 0;
  size_t end = 0;
  for (; end < text.size(); ++end) {
    if (IsContinuationByte(text[end])) continue;
    if (kept == width - kCutMark.size()) break;
    ++kept;
  }
  // A cut right after a blank would read as a gap before the mark.
  return absl::StrCat(absl::StripTrailingAsciiWhitespace(text.substr(0, end)), kCutMark);
}

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  // Cells carry text from the server (labels, messages) that other clients wrote: escaped, so
  // that none can move the terminal's cursor, clear it, or break a row in two.
  for (std::string& cell : cells) cell = common::EscapeForTerminal(cell);
  rows_.push_back(std::move(cells));
}

void TextTable::FitTo(size_t width, size_t column, size_t min_width) {
  fit_width_ = width;
  fit_column_ = column;
  fit_min_width_ = min_width;
}

std::vector<size_t> TextTable::Widths() const {
  std::vector<size_t> widths(columns_.size());
  size_t total = 0;
  for (size_t c = 0; c < columns_.size(); ++c) {
    for (absl::string_view line : absl::StrSplit(columns_[c].title, '\n')) {
      widths[c] = std::max(widths[c], DisplayWidth(line));
    }
    for (const auto& row : rows_) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
    total += widths[c] + (c > 0 ? 2 : 0);
  }
  if (fit_width_ > 0 && fit_column_ < widths.size() && total > fit_width_) {
    const size_t over = total - fit_width_;
    size_t& cut = widths[fit_column_];
    cut = std::max(std::min(cut, fit_min_width_), cut > over ? cut - over : 0);
  }
  return widths;
}

std::string TextTable::Render() const {
  const std::vector<size_t> widths = Widths();
  std::string out;
  auto append_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line += "  ";
      const std::string cell = CutToWidth(cells[c], widths[c]);
      const size_t pad = widths[c] - DisplayWidth(cell);
      if (columns_[c].align == Align::kRight) line.append(pad, ' ');
      line += cell;
      if (columns_[c].align == Align::kLeft) line.append(pad, ' ');
    }
    // Trailing blanks come from a short left-aligned last column; they only upset diffs.
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line));
    out += '\n';
  };
  size_t header_lines = 1;
  for (const Column& column : columns_) {
    header_lines = std::max<size_t>(header_lines,
                                    1 + std::count(column.title.begin(), column.title.end(), '\n'));
  }
  for (size_t l = 0; l < header_lines; ++l) {
    std::vector<std::string> header;
    for (const Column& column : columns_) {
      std::vector<std::string> lines = absl::StrSplit(column.title, '\n');
      header.push_back(l < lines.size() ? lines[l] : "");
    }
    append_line(header);
  }
  for (const auto& row : rows_) append_line(row);
  return out;
}

}  // namespace colltest::client
