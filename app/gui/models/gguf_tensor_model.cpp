#include "models/gguf_tensor_model.h"

#include <QLocale>

#include "text/number_format.h"

namespace qs::gui {
namespace {

double bitsPerWeight(const io::TensorInfo& t) {
    const std::int64_t n = t.numel();
    return n > 0 ? 8.0 * static_cast<double>(t.byteSize()) / static_cast<double>(n) : 0.0;
}

}  // namespace

void GgufTensorModel::setCheckpoint(const io::Checkpoint* checkpoint) {
    beginResetModel();
    rows_.clear();
    rowByName_.clear();
    if (const io::GgufFile* file = checkpoint ? checkpoint->gguf() : nullptr) {
        for (const io::TensorInfo& t : file->tensors()) {
            rowByName_.insert(QString::fromStdString(t.name), static_cast<int>(rows_.size()));
            rows_.push_back({&t, {}, 0});
        }
        for (const io::GgufTensorName& n : io::ggufTensorNames(*file)) {
            const auto it = rowByName_.constFind(QString::fromStdString(n.gguf));
            if (it == rowByName_.constEnd() || !checkpoint->find(n.hf)) continue;
            Row& row = rows_[static_cast<std::size_t>(*it)];
            const QString hf = QString::fromStdString(n.hf);
            if (row.hfCount++ == 0) row.hfName = hf;
            rowByName_.insert(hf, *it);
        }
    }
    endResetModel();
}

int GgufTensorModel::rowOfTensor(const QString& name) const { return rowByName_.value(name, -1); }

int GgufTensorModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int GgufTensorModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant GgufTensorModel::displayData(const Row& row, int column) const {
    const io::TensorInfo& t = *row.info;
    switch (column) {
        case GgufNameColumn: return QString::fromStdString(t.name);
        case HfNameColumn:
            if (row.hfName.isEmpty()) return QStringLiteral("–");
            return row.hfCount > 1 ? tr("%1 (+%2 experts)").arg(row.hfName).arg(row.hfCount - 1) : row.hfName;
        case TypeColumn: return QString::fromStdString(t.typeName());
        case ShapeColumn: return shapeText(t.shape);
        case BytesColumn: return QLocale().toString(qulonglong(t.byteSize()));
        case BitsColumn: return QString::number(bitsPerWeight(t), 'f', 2);
        default: return {};
    }
}

QVariant GgufTensorModel::sortData(const Row& row, int index, int column) const {
    switch (column) {
        case GgufNameColumn: return index;  // file order
        case HfNameColumn: return row.hfName;
        case TypeColumn: return QString::fromStdString(row.info->typeName());
        case ShapeColumn: return qlonglong(row.info->numel());
        case BytesColumn: return qulonglong(row.info->byteSize());
        case BitsColumn: return bitsPerWeight(*row.info);
        default: return {};
    }
}

QVariant GgufTensorModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const Row& row = rows_[static_cast<std::size_t>(index.row())];
    switch (role) {
        case Qt::DisplayRole: return displayData(row, index.column());
        case Qt::ToolTipRole:
            return index.column() == HfNameColumn && row.hfName.isEmpty()
                       ? tr("No tensor of the checkpoint is read from this one")
                       : displayData(row, index.column());
        case Qt::TextAlignmentRole:
            return index.column() >= BytesColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
        case TensorNameRole: return row.hfName;
        case SortRole: return sortData(row, index.row(), index.column());
        default: return {};
    }
}

QVariant GgufTensorModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole && section == BitsColumn)
        return tr("Bits per weight: 8 × bytes / weights, the type's, its block scales included");
    if (role != Qt::DisplayRole) return {};
    switch (section) {
        case GgufNameColumn: return tr("GGUF name");
        case HfNameColumn: return tr("Hugging Face name");
        case TypeColumn: return tr("Type");
        case ShapeColumn: return tr("Shape");
        case BytesColumn: return tr("Bytes");
        case BitsColumn: return tr("bpw");
        default: return {};
    }
}

}  // namespace qs::gui
