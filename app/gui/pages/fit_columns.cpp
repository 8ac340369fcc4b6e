#include "pages/fit_columns.h"

#include <algorithm>

#include <QAbstractItemModel>
#include <QFontMetrics>
#include <QHeaderView>
#include <QTableView>

namespace qs::gui {

void fitColumnsToContents(QTableView* table) {
    const QFontMetrics metrics = table->horizontalHeader()->fontMetrics();
    const QAbstractItemModel* model = table->model();
    for (int column = 0; column < model->columnCount(); ++column) {
        const QString title = model->headerData(column, Qt::Horizontal).toString();
        table->setColumnWidth(column, std::max(static_cast<QAbstractItemView*>(table)->sizeHintForColumn(column),
                                               metrics.horizontalAdvance(title) + 14));
    }
}

}  // namespace qs::gui
