#include "models/checkpoint_filter_model.h"

#include <QRegularExpression>

#include "models/checkpoint_tree_model.h"

namespace qs::gui {

CheckpointFilterModel::CheckpointFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
    setRecursiveFilteringEnabled(true);
    setAutoAcceptChildRows(true);
    setFilterRole(CheckpointTreeModel::FilterTextRole);
    setSortRole(CheckpointTreeModel::SortRole);
    setFilterKeyColumn(CheckpointTreeModel::NameColumn);
}

bool CheckpointFilterModel::setPattern(const QString& pattern, bool regex) {
    const QRegularExpression expression(regex ? pattern : QRegularExpression::escape(pattern),
                                        QRegularExpression::CaseInsensitiveOption);
    if (!expression.isValid()) return false;
    setFilterRegularExpression(expression);
    filtering_ = !pattern.isEmpty();
    return true;
}

// A GGUF checkpoint's tensors match by the file's own names too ("attn_q", "blk.3."), which the tree shows
// beside the Hugging Face ones.
bool CheckpointFilterModel::filterAcceptsRow(int row, const QModelIndex& parent) const {
    if (QSortFilterProxyModel::filterAcceptsRow(row, parent)) return true;
    const QString gguf = sourceModel()
                             ->index(row, CheckpointTreeModel::NameColumn, parent)
                             .data(CheckpointTreeModel::GgufNameRole)
                             .toString();
    return !gguf.isEmpty() && filterRegularExpression().match(gguf).hasMatch();
}

QVariant CheckpointFilterModel::data(const QModelIndex& index, int role) const {
    if (!filtering_ || role != Qt::DisplayRole || index.column() != CheckpointTreeModel::ShapeColumn)
        return QSortFilterProxyModel::data(index, role);
    const QVariant all = QSortFilterProxyModel::data(index, CheckpointTreeModel::GroupItemsRole);
    if (!all.isValid()) return QSortFilterProxyModel::data(index, role);
    const int shown = rowCount(index.siblingAtColumn(CheckpointTreeModel::NameColumn));
    const int total = static_cast<int>(all.toLongLong());
    if (shown == total) return QSortFilterProxyModel::data(index, role);
    return tr("%1 of %n item(s)", nullptr, total).arg(shown);
}

}  // namespace qs::gui
