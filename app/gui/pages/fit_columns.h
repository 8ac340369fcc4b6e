#pragma once
// A table's columns each as wide as its widest cell or its title, without the room
// QHeaderView::ResizeToContents keeps on every title for a sort arrow: the Results and Side by side
// tables then fit the centre of a 1366-pixel laptop window.
class QTableView;

namespace qs::gui {

void fitColumnsToContents(QTableView* table);

}  // namespace qs::gui
