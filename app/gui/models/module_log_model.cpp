#include "models/module_log_model.h"

#include <cmath>

#include <QColor>

#include "text/number_format.h"

namespace qs::gui {
namespace {

// NaN is how the core says "does not apply to this method" (GPTQ loss for RTN, ...).
QVariant optionalNumber(double value, int digits) {
    if (!std::isfinite(value)) return QStringLiteral("–");
    return QString::number(value, 'g', digits);
}

}  // namespace

void ModuleLogModel::append(const pipeline::ModuleLog& row) {
    const int at = static_cast<int>(rows_.size());
    beginInsertRows({}, at, at);
    rows_.push_back(row);
    endInsertRows();
}

void ModuleLogModel::clear() {
    beginResetModel();
    rows_.clear();
    endResetModel();
}

int ModuleLogModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ModuleLogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ModuleLogModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    if (role == Qt::TextAlignmentRole && index.column() != MethodColumn && index.column() != ModuleColumn)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    const pipeline::ModuleLog& row = rows_[static_cast<std::size_t>(index.row())];
    switch (role) {
        case Qt::DisplayRole: return display(row, index.column());
        // Translucent: a tint on light and dark palettes alike.
        case Qt::BackgroundRole: return row.starved() ? QVariant(QColor(230, 60, 30, 70)) : QVariant();
        case Qt::ToolTipRole: return row.starved() ? QVariant(starvedText(row)) : QVariant();
        default: return {};
    }
}

QString ModuleLogModel::starvedText(const pipeline::ModuleLog& row) {
    return tr("Starved expert: its Hessian came from %1 tokens for %2 inputs, so GPTQ worked mostly from the damping "
              "(calibrate every expert on every token, or give it more text)")
        .arg(row.samples)
        .arg(row.inFeatures);
}

QVariant ModuleLogModel::display(const pipeline::ModuleLog& row, int column) const {
    switch (column) {
        case MethodColumn: return QString::fromStdString(row.method);
        case LayerColumn: return row.layer;
        case ModuleColumn: return QString::fromStdString(row.module);
        case InColumn: return static_cast<qlonglong>(row.inFeatures);
        case OutColumn: return static_cast<qlonglong>(row.outFeatures);
        case ErrorColumn: return optionalNumber(row.outputError, 4);
        case LossColumn: return optionalNumber(row.loss, 4);
        case SamplesColumn: return static_cast<qlonglong>(row.samples);
        case RoutedColumn:  // blank for the linears that are not experts
            if (row.routedTokens < 0) return QString();
            return row.starved() ? tr("%1 (starved)").arg(row.routedTokens) : QString::number(row.routedTokens);
        case DampColumn: return optionalNumber(row.damp, 3);
        case TimeColumn: return durationText(row.seconds);
        case BitsColumn: return QString::number(row.bitsPerWeight, 'f', 3);
        case MemoryColumn: return humanBytes(row.residentBytes);
        default: return {};
    }
}

QVariant ModuleLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == RoutedColumn)
        return tr("Calibration tokens the router sent to this expert; blank for the linears that are not experts");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case MethodColumn: return tr("method");
        case LayerColumn: return tr("layer");
        case ModuleColumn: return tr("module");
        case InColumn: return tr("in");
        case OutColumn: return tr("out");
        case ErrorColumn: return tr("output error");
        case LossColumn: return tr("loss");
        case SamplesColumn: return tr("samples");
        case RoutedColumn: return tr("tokens routed");
        case DampColumn: return tr("damp");
        case TimeColumn: return tr("time");
        case BitsColumn: return tr("bpw");
        case MemoryColumn: return tr("memory");
        default: return {};
    }
}

}  // namespace qs::gui
