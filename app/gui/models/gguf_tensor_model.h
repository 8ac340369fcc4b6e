#pragma once
// The GGUF tab's tensor table: one row per tensor of the file, in file order, with its GGUF name, the
// Hugging Face name the checkpoint shows it under, its ggml type, row-major shape, bytes and bits per
// weight (8 × bytes / elements: its type's, block scales included). Sorted through a proxy on SortRole.
#include <cstdint>
#include <string>
#include <vector>

#include <QAbstractTableModel>
#include <QHash>

#include "qs/io/checkpoint.h"
#include "qs/io/gguf_tensor_names.h"

namespace qs::gui {

class GgufTensorModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { GgufNameColumn, HfNameColumn, TypeColumn, ShapeColumn, BytesColumn, BitsColumn, ColumnCount };
    enum Role {
        TensorNameRole = Qt::UserRole + 1,  // the checkpoint (Hugging Face) tensor a row selects; "" when none
        SortRole,                           // numbers for the numeric columns, file order for the names
    };

    using QAbstractTableModel::QAbstractTableModel;

    void setCheckpoint(const io::Checkpoint* checkpoint);  // nullptr or a safetensors checkpoint: empty
    int rowOfTensor(const QString& name) const;            // by either name; -1 when absent

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        const io::TensorInfo* info = nullptr;  // the file's tensor (GGUF name, row-major shape)
        QString hfName;                        // the first checkpoint tensor read from it ("" for none)
        int hfCount = 0;                       // a stacked expert tensor: one per expert
    };
    QVariant displayData(const Row& row, int column) const;
    QVariant sortData(const Row& row, int index, int column) const;

    std::vector<Row> rows_;
    QHash<QString, int> rowByName_;  // GGUF names and every Hugging Face name (each expert of a stacked tensor)
};

}  // namespace qs::gui
