#include "models/side_by_side_model.h"

#include <limits>

namespace qs::gui {
namespace {

QString bitsText(double bits) { return QString::number(bits, 'f', 2); }
QString rmsText(double rms) { return QString::number(rms, 'g', 3); }
QString errorText(const std::optional<double>& rms) { return rms ? rmsText(*rms) : QStringLiteral("–"); }
// "q4_K" of "gguf q4_K": llama.cpp's type names need no prefix, and the table is narrow.
QString typeText(const std::string& type) {
    const QString text = QString::fromStdString(type);
    return text.startsWith(QLatin1String("gguf ")) ? text.mid(5) : text;
}
double errorNumber(const std::optional<double>& rms) { return rms ? *rms : std::numeric_limits<double>::quiet_NaN(); }

}  // namespace

QString shortLinearName(const std::string& prefix) {
    const QString name = QString::fromStdString(prefix);
    const QLatin1String layers("model.layers.");
    return name.startsWith(layers) ? name.mid(layers.size()) : name;
}

void SideBySideModel::setDiff(DiffPtr diff) {
    beginResetModel();
    diff_ = std::move(diff);
    endResetModel();
}

int SideBySideModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !diff_ ? 0 : static_cast<int>(diff_->linears.size());
}

int SideBySideModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SideBySideModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const formats::LinearDiff& d = linear(index.row());
    switch (role) {
        case Qt::DisplayRole: return display(d, index.column());
        case SortRole: return number(d, index.column());
        case DiffersRole: return d.differs ? QStringLiteral("yes") : QStringLiteral("no");
        case Qt::ToolTipRole: return index.column() == LinearColumn ? QString::fromStdString(d.ref.prefix) : QVariant();
        case Qt::TextAlignmentRole:
            if (index.column() == BitsAColumn || index.column() == BitsBColumn || index.column() == ErrorAColumn ||
                index.column() == ErrorBColumn || index.column() == RmsDifferenceColumn)
                return QVariant(Qt::AlignRight | Qt::AlignVCenter);
            return {};
        default: return {};
    }
}

QVariant SideBySideModel::display(const formats::LinearDiff& d, int column) const {
    switch (column) {
        case LinearColumn: return shortLinearName(d.ref.prefix);
        case TypeAColumn: return typeText(d.typeA);
        case BitsAColumn: return bitsText(d.bitsA);
        case ErrorAColumn: return errorText(d.errorA);
        case TypeBColumn: return typeText(d.typeB);
        case BitsBColumn: return bitsText(d.bitsB);
        case ErrorBColumn: return errorText(d.errorB);
        case RmsDifferenceColumn: return rmsText(d.rmsAMinusB);
        case DiffersColumn: return d.differs ? tr("yes") : tr("no");
        default: return {};
    }
}

QVariant SideBySideModel::number(const formats::LinearDiff& d, int column) const {
    switch (column) {
        case BitsAColumn: return d.bitsA;
        case ErrorAColumn: return errorNumber(d.errorA);
        case BitsBColumn: return d.bitsB;
        case ErrorBColumn: return errorNumber(d.errorB);
        case RmsDifferenceColumn: return d.rmsAMinusB;
        case DiffersColumn: return d.differs ? 1 : 0;
        default: return display(d, column);
    }
}

QVariant SideBySideModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole) {
        switch (section) {
            case TypeAColumn: return tr("How A (the open checkpoint) stores the linear");
            case TypeBColumn: return tr("How B (the second quantization) stores the linear");
            case BitsAColumn: return tr("A's bits stored per weight: codes, scales, zeros and g_idx (a GGUF's blocks)");
            case BitsBColumn: return tr("B's bits stored per weight: codes, scales, zeros and g_idx (a GGUF's blocks)");
            case ErrorAColumn: return tr("RMS of A's decoded weights − the original's (after Compare with Original…)");
            case ErrorBColumn: return tr("RMS of B's decoded weights − the original's (after Compare with Original…)");
            case RmsDifferenceColumn: return tr("RMS of decoded A − decoded B");
            case DiffersColumn: return tr("Whether the decoded weights of A and B differ at all (bit for bit)");
            default: return {};
        }
    }
    if (role != Qt::DisplayRole) return {};
    switch (section) {
        case LinearColumn: return tr("linear");
        // Short: eight columns share a laptop's centre; each type column says whose the two after it are.
        case TypeAColumn: return tr("A: type");
        case BitsAColumn: return tr("bpw");
        case ErrorAColumn: return tr("error");
        case TypeBColumn: return tr("B: type");
        case BitsBColumn: return tr("bpw");
        case ErrorBColumn: return tr("error");
        case RmsDifferenceColumn: return tr("RMS A−B");
        case DiffersColumn: return tr("A ≠ B");
        default: return {};
    }
}

}  // namespace qs::gui
