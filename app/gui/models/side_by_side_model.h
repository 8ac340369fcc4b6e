#pragma once
// The Side by side tab's table: one row per linear quantized in either of two files, the scheme, bits
// per weight and error against the original of each, the RMS of A − B and whether they differ.
#include <QAbstractTableModel>

#include "jobs/diff_job.h"

namespace qs::gui {

class SideBySideModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        LinearColumn,
        DiffersColumn,  // second: it stays in view when the errors scroll
        TypeAColumn,
        BitsAColumn,
        ErrorAColumn,
        TypeBColumn,
        BitsBColumn,
        ErrorBColumn,
        RmsDifferenceColumn,
        ColumnCount
    };
    static constexpr int SortRole = Qt::UserRole + 1;     // the number behind a cell
    static constexpr int DiffersRole = Qt::UserRole + 2;  // "yes" / "no" on every cell, for the filter

    using QAbstractTableModel::QAbstractTableModel;

    void setDiff(DiffPtr diff);  // null: empty
    const DiffPtr& diff() const { return diff_; }
    const formats::LinearDiff& linear(int row) const { return diff_->linears.at(static_cast<std::size_t>(row)); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(const formats::LinearDiff& d, int column) const;
    QVariant number(const formats::LinearDiff& d, int column) const;

    DiffPtr diff_;
};

// "0.mlp.down_proj" of "model.layers.0.mlp.down_proj": nine columns share a laptop's centre.
QString shortLinearName(const std::string& prefix);

}  // namespace qs::gui
