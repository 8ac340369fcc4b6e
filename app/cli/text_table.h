#pragma once
// A plain-text table with aligned columns for terminal output: text columns are left-aligned,
// numeric ones right-aligned so that digits line up.
#include <ostream>
#include <string>
#include <vector>

namespace qs::cli {

class TextTable {
public:
    enum class Align { Left, Right };
    struct Column {
        std::string title;
        Align align = Align::Left;
    };

    explicit TextTable(std::vector<Column> columns);
    void addRow(std::vector<std::string> cells);  // one cell per column
    void print(std::ostream& out) const;          // header, rule, rows; two spaces between columns

private:
    void printRow(std::ostream& out, const std::vector<std::string>& cells,
                  const std::vector<std::size_t>& widths) const;

    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace qs::cli
