// A column-aligned plain-text table for terminal output.
#ifndef COLLTEST_CLIENT_TEXT_TABLE_H_
#define COLLTEST_CLIENT_TEXT_TABLE_H_

#include <string>
#include <vector>

namespace colltest::client {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns);

  // Missing trailing cells render empty; extra cells are dropped. Every cell is escaped with
  // common::EscapeForTerminal (control characters and invalid UTF-8 as \xNN).
  void AddRow(std::vector<std::string> cells);

  // Header, then one line per row, columns separated by two spaces, no trailing blanks.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_TEXT_TABLE_H_
