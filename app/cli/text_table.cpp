#include "text_table.h"

#include <algorithm>
#include <stdexcept>

namespace qs::cli {

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::addRow(std::vector<std::string> cells) {
    if (cells.size() != columns_.size()) throw std::logic_error("TextTable: row has the wrong number of cells");
    rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out) const {
    std::vector<std::size_t> widths;
    for (const Column& column : columns_) widths.push_back(column.title.size());
    for (const auto& row : rows_) {
        for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    std::vector<std::string> titles;
    std::vector<std::string> rules;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        titles.push_back(columns_[c].title);
        rules.emplace_back(widths[c], '-');
    }
    printRow(out, titles, widths);
    printRow(out, rules, widths);
    for (const auto& row : rows_) printRow(out, row, widths);
}

void TextTable::printRow(std::ostream& out, const std::vector<std::string>& cells,
                         const std::vector<std::size_t>& widths) const {
    std::string line;
    for (std::size_t c = 0; c < cells.size(); ++c) {
        if (c > 0) line += "  ";
        const std::string padding(widths[c] - cells[c].size(), ' ');
        const bool last = c + 1 == cells.size();
        if (columns_[c].align == Align::Right) {
            line += padding + cells[c];
        } else {
            line += cells[c];
            if (!last) line += padding;  // no trailing blanks at the end of a line
        }
    }
    out << line << '\n';
}

}  // namespace qs::cli
