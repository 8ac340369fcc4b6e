#pragma once
// The summary dock: what Checkpoint::summary() says of the open checkpoint, one line per fact.
#include <QWidget>

#include "qs/io/checkpoint.h"

class QFormLayout;
class QLabel;

namespace qs::gui {

class SummaryPanel : public QWidget {
    Q_OBJECT

public:
    explicit SummaryPanel(QWidget* parent = nullptr);

    void setSummary(const QString& path, const io::CheckpointSummary& summary, int tensorCount);
    void clear();
    QString text(const QString& field) const;   // a field's shown value, for tests

private:
    QLabel* addRow(const QString& field);

    QFormLayout* form_;
    QList<QPair<QString, QLabel*>> rows_;
};

}  // namespace qs::gui
