#include "models/results_table_model.h"

#include <cmath>

#include <QColor>

#include "text/number_format.h"
#include "text/results_format.h"

namespace qs::gui {

void ResultsTableModel::setResult(JobResultPtr result) {
    beginResetModel();
    result_ = std::move(result);
    endResetModel();
}

int ResultsTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !result_ ? 0 : static_cast<int>(result_->methods.size());
}

int ResultsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ResultsTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const pipeline::MethodResult& m = result_->methods[static_cast<std::size_t>(index.row())];
    switch (role) {
        case Qt::DisplayRole: return display(m, index.column());
        case SortRole: return number(m, index.column());
        case Qt::ToolTipRole: return toolTip(m);
        case Qt::ForegroundRole: return m.error.empty() ? QVariant() : QColor(176, 48, 48);
        case Qt::TextAlignmentRole:
            return index.column() == MethodColumn ? QVariant() : QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        default: return {};
    }
}

QVariant ResultsTableModel::toolTip(const pipeline::MethodResult& m) const {
    if (!m.error.empty()) return QString::fromStdString(m.error);
    // Its reference is the original named in Compare with Original…; a method's is the open checkpoint.
    if (!m.evaluatedCheckpoint.empty())
        return tr(
            "The open checkpoint as it is, evaluated against its original (File ▸ Evaluate against "
            "Original, as quantscope-cli eval): one KL for the whole checkpoint; its bits per weight are what its "
            "decoder linears store (codes, scales, zeros, g_idx), its size the files on disk.");
    return {};
}

QVariant ResultsTableModel::number(const pipeline::MethodResult& m, int column) const {
    switch (column) {
        case BitsColumn: return m.bitsPerWeight;
        case SizeColumn: return static_cast<qulonglong>(m.checkpointBytes);
        case MeanColumn: return m.kl.meanKld.value;
        case MedianColumn: return m.kl.kld.median;
        case P99Column: return m.kl.kld.p99;
        case SameTopColumn: return m.kl.sameTop.value;
        case PplRatioColumn: return m.kl.pplRatio.value;
        case TimeColumn: return m.seconds;
        default: return methodLabel(m);
    }
}

QVariant ResultsTableModel::display(const pipeline::MethodResult& m, int column) const {
    if (column == MethodColumn) return methodLabel(m);
    if (!m.error.empty()) return column == BitsColumn ? tr("failed") : QStringLiteral("–");
    const bool evaluated = hasKl(m);
    switch (column) {
        case BitsColumn:  // NaN: an evaluated checkpoint that quantizes no decoder linear
            return std::isfinite(m.bitsPerWeight) ? QString::number(m.bitsPerWeight, 'f', 3) : QStringLiteral("–");
        case SizeColumn: return humanBytes(m.checkpointBytes);
        case MeanColumn: return evaluated ? klText(m.kl.meanKld.value) : QStringLiteral("–");
        case MedianColumn: return evaluated ? klText(m.kl.kld.median) : QStringLiteral("–");
        case P99Column: return evaluated ? klText(m.kl.kld.p99) : QStringLiteral("–");
        case SameTopColumn:
            return evaluated ? QStringLiteral("%1 %").arg(100.0 * m.kl.sameTop.value, 0, 'f', 2) : QStringLiteral("–");
        case PplRatioColumn: return evaluated ? QString::number(m.kl.pplRatio.value, 'f', 4) : QStringLiteral("–");
        case TimeColumn: return durationText(m.seconds);
        default: return {};
    }
}

QVariant ResultsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole && section == SizeColumn)
        return tr(
            "The method's size: its bits per weight over the quantized linears plus the tensors kept. A "
            "layout stores more (GPTQ's g_idx and packed zeros, headers): the Export panel measures the "
            "chosen layout's files to the byte.");
    if (role != Qt::DisplayRole) return {};
    switch (section) {
        case MethodColumn: return tr("method");
        case BitsColumn: return tr("bpw");
        case SizeColumn: return tr("size");
        case MeanColumn: return tr("mean KLD");
        case MedianColumn: return tr("median");
        case P99Column: return tr("99%");
        case SameTopColumn: return tr("same top p");
        case PplRatioColumn: return tr("PPL ratio");
        case TimeColumn: return tr("time");
        default: return {};
    }
}

}  // namespace qs::gui
