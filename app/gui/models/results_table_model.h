#pragma once
// Results: one row per method with llama.cpp's KL vocabulary (mean / median / p99 KLD, same top p,
// PPL ratio) beside its bits per weight, checkpoint size and quantization time.
#include <QAbstractTableModel>

#include "jobs/quantize_job.h"

namespace qs::gui {

class ResultsTableModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        MethodColumn,
        BitsColumn,
        SizeColumn,
        MeanColumn,
        MedianColumn,
        P99Column,
        SameTopColumn,
        PplRatioColumn,
        TimeColumn,
        ColumnCount
    };
    static constexpr int SortRole = Qt::UserRole + 1;  // the number behind a cell

    using QAbstractTableModel::QAbstractTableModel;

    void setResult(JobResultPtr result);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(const pipeline::MethodResult& m, int column) const;
    QVariant number(const pipeline::MethodResult& m, int column) const;
    QVariant toolTip(const pipeline::MethodResult& m) const;

    JobResultPtr result_;
};

}  // namespace qs::gui
