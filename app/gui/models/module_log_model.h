#pragma once
// The per-module log of a quantization job, GPTQModel's columns: one row per (method, layer,
// module) as the job reports them, appended while it runs. A MoE expert's row also says how many
// tokens the router sent it; a starved expert's row is tinted and says why.
#include <vector>

#include <QAbstractTableModel>

#include "qs/pipeline/job_result.h"

namespace qs::gui {

class ModuleLogModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        MethodColumn,
        LayerColumn,
        ModuleColumn,
        InColumn,
        OutColumn,
        ErrorColumn,
        LossColumn,
        SamplesColumn,
        RoutedColumn,
        DampColumn,
        TimeColumn,
        BitsColumn,
        MemoryColumn,
        ColumnCount
    };

    using QAbstractTableModel::QAbstractTableModel;

    void append(const pipeline::ModuleLog& row);
    void clear();
    const std::vector<pipeline::ModuleLog>& rows() const { return rows_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(const pipeline::ModuleLog& row, int column) const;
    static QString starvedText(const pipeline::ModuleLog& row);

    std::vector<pipeline::ModuleLog> rows_;
};

}  // namespace qs::gui
