#pragma once
// The summary dock: what Checkpoint::summary() and formats::detect say of the open checkpoint, one
// line per fact; for a GGUF, its bits per weight too (io::ggufBitsPerWeight, as `inspect` gives it).
#include <QWidget>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

class QFormLayout;
class QLabel;

namespace qs::gui {

class SummaryPanel : public QWidget {
    Q_OBJECT

public:
    explicit SummaryPanel(QWidget* parent = nullptr);

    // `format` (formats::detect) gives a quantized checkpoint's scheme and its model's true parameter
    // count: the summary's own counts stored elements, eight int4 weights to a GPTQ int32.
    void setSummary(const QString& path, const io::Checkpoint& checkpoint, const formats::FormatInfo& format);
    void clear();
    QString text(const QString& field) const;  // a field's shown value, for tests

private:
    QLabel* addRow(const QString& field);

    QFormLayout* form_;
    QLabel* bits_ = nullptr;  // a GGUF's bits per weight; the row is hidden for any other checkpoint
    QList<QPair<QString, QLabel*>> rows_;
};

}  // namespace qs::gui
