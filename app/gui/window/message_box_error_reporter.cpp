#include "window/message_box_error_reporter.h"

#include <QMessageBox>

namespace qs::gui {

void MessageBoxErrorReporter::report(const QString& title, const QString& message) {
    QMessageBox box(QMessageBox::Critical, title, message, QMessageBox::Ok, parent_);
    box.setObjectName(QLatin1String(kDialogObjectName));
    box.setTextInteractionFlags(Qt::TextSelectableByMouse);  // so that paths can be copied
    box.exec();
}

}  // namespace qs::gui
