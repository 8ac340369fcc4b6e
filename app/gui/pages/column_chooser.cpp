#include "pages/column_chooser.h"

#include <QAbstractItemModel>
#include <QAction>
#include <QHeaderView>
#include <QMenu>
#include <QTableView>

namespace qs::gui {

ColumnChooser::ColumnChooser(QTableView* table, QList<int> hiddenAtFirst)
    : QObject(table), table_(table), hiddenAtFirst_(std::move(hiddenAtFirst)) {
    QHeaderView* header = table_->horizontalHeader();
    header->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(header, &QHeaderView::customContextMenuRequested, this, [this, header](const QPoint& at) {
        QMenu* chooser = menu(table_);
        chooser->setAttribute(Qt::WA_DeleteOnClose);
        chooser->popup(header->viewport()->mapToGlobal(at));
    });
    restoreDefaults();
}

QString ColumnChooser::title(int column) const {
    return table_->model()->headerData(column, Qt::Horizontal).toString();
}

QMenu* ColumnChooser::menu(QWidget* parent) {
    auto* chooser = new QMenu(parent);
    for (int column = 1; column < table_->model()->columnCount(); ++column) {
        QAction* action = chooser->addAction(title(column));
        action->setCheckable(true);
        action->setChecked(isShown(column));
        action->setData(column);
        connect(action, &QAction::toggled, this, [this, column](bool shown) { setShown(column, shown); });
    }
    return chooser;
}

void ColumnChooser::setShown(int column, bool shown) {
    if (column <= 0 || isShown(column) == shown) return;
    table_->setColumnHidden(column, !shown);
    emit changed();
}

bool ColumnChooser::isShown(int column) const { return !table_->isColumnHidden(column); }

QStringList ColumnChooser::hiddenTitles() const {
    QStringList titles;
    for (int column = 1; column < table_->model()->columnCount(); ++column)
        if (!isShown(column)) titles << title(column);
    return titles;
}

void ColumnChooser::setHiddenTitles(const QStringList& titles) {
    for (int column = 1; column < table_->model()->columnCount(); ++column)
        setShown(column, !titles.contains(title(column)));
}

void ColumnChooser::restoreDefaults() {
    for (int column = 1; column < table_->model()->columnCount(); ++column)
        setShown(column, !hiddenAtFirst_.contains(column));
}

}  // namespace qs::gui
