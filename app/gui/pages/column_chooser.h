#pragma once
// Which of a table's columns are shown. A right click on the header opens a menu of the columns (all but
// the first, the row's name) to tick; some start hidden, for a table wider than a laptop window's centre.
// The choice is the columns' titles, which a window saves and restores with its other settings.
#include <QList>
#include <QObject>
#include <QStringList>

class QMenu;
class QTableView;
class QWidget;

namespace qs::gui {

class ColumnChooser : public QObject {
    Q_OBJECT

public:
    // `hiddenAtFirst`: the columns hidden until the user shows them (and after Restore Defaults).
    ColumnChooser(QTableView* table, QList<int> hiddenAtFirst);

    // The header's menu: a checkable entry per column but the first, ticked when it is shown.
    QMenu* menu(QWidget* parent);
    void setShown(int column, bool shown);
    bool isShown(int column) const;

    QStringList hiddenTitles() const;                 // what a window saves
    void setHiddenTitles(const QStringList& titles);  // what it restores: the others shown
    void restoreDefaults();

signals:
    void changed();  // a column was shown or hidden

private:
    QString title(int column) const;

    QTableView* table_;
    QList<int> hiddenAtFirst_;
};

}  // namespace qs::gui
