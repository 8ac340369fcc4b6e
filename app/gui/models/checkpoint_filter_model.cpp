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
    return true;
}

}  // namespace qs::gui
