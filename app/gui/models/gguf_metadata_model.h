#pragma once
// The GGUF tab's metadata table: what the container's header says (version, file type by name,
// alignment, tensor count), bits per weight as `inspect` gives it (io::ggufBitsPerWeight), then every
// metadata key in file order. An array shows as its type and length with its first few values: a
// tokenizer's vocabulary of 150 000 strings is one short line, never the list.
#include <vector>

#include <QAbstractTableModel>

#include "qs/io/checkpoint.h"

namespace qs::gui {

class GgufMetadataModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { KeyColumn, ValueColumn, ColumnCount };

    using QAbstractTableModel::QAbstractTableModel;

    void setCheckpoint(const io::Checkpoint* checkpoint);  // nullptr or a safetensors checkpoint: empty
    QString value(const QString& key) const;               // the shown value of a row, "" when absent (tests)

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static constexpr int kArrayValuesShown = 4;

private:
    struct Row {
        QString key;
        QString value;
        QString toolTip;
        bool header = false;  // one of the container's own rows, shown bold
    };
    std::vector<Row> rows_;
};

// "[array of 32000 string] <unk>, <s>, </s>, <0x00>, …"; a scalar as text; each value one line, sanitized.
QString ggufValueText(const io::GgufValue& value);

}  // namespace qs::gui
