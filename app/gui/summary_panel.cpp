#include "summary_panel.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QStringList>

#include "number_format.h"

namespace qs::gui {
namespace {

QString dtypeBreakdown(const std::map<std::string, std::uint64_t>& bytesByDtype) {
    QStringList parts;
    for (const auto& [dtype, bytes] : bytesByDtype) {
        parts << QStringLiteral("%1 %2").arg(QString::fromStdString(dtype), humanBytes(bytes));
    }
    return parts.isEmpty() ? QStringLiteral("–") : parts.join(QStringLiteral(", "));
}

QString orDash(const std::string& s) {
    return s.empty() ? QStringLiteral("–") : QString::fromStdString(s);
}

}  // namespace

SummaryPanel::SummaryPanel(QWidget* parent) : QWidget(parent), form_(new QFormLayout(this)) {
    form_->setContentsMargins(8, 6, 8, 6);
    form_->setLabelAlignment(Qt::AlignRight);
    form_->setVerticalSpacing(3);
    for (const QString& field : {tr("Checkpoint"), tr("Architecture"), tr("Layers"), tr("Hidden size"),
                                 tr("Parameters"), tr("Tensors"), tr("DTypes"), tr("Size on disk"),
                                 tr("Quantization"), tr("Tokenizer")}) {
        addRow(field);
    }
    clear();
}

QLabel* SummaryPanel::addRow(const QString& field) {
    auto* value = new QLabel(this);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setWordWrap(true);
    form_->addRow(field + QLatin1Char(':'), value);
    rows_.append({field, value});
    return value;
}

void SummaryPanel::setSummary(const QString& path, const io::CheckpointSummary& s, int tensorCount) {
    const QLocale locale;
    const QString architecture = s.modelType.empty() || s.modelType == s.architecture
                                     ? orDash(s.architecture)
                                     : QStringLiteral("%1 (%2)").arg(orDash(s.architecture), QString::fromStdString(s.modelType));
    const QStringList values = {
        QFileInfo(path).fileName(),
        architecture,
        s.numLayers > 0 ? QString::number(s.numLayers) : QStringLiteral("–"),
        s.hiddenSize > 0 ? QString::number(s.hiddenSize) : QStringLiteral("–"),
        QStringLiteral("%1 (%2)").arg(humanCount(s.parameterCount), locale.toString(qlonglong(s.parameterCount))),
        QString::number(tensorCount),
        dtypeBreakdown(s.bytesByDtype),
        humanBytes(s.sizeOnDisk),
        orDash(s.quantizationFormat),
        s.hasTokenizer ? tr("yes") : tr("no"),
    };
    for (int i = 0; i < rows_.size(); ++i) rows_[i].second->setText(values[i]);
    rows_[0].second->setToolTip(path);
}

void SummaryPanel::clear() {
    for (auto& [field, label] : rows_) label->setText(QStringLiteral("–"));
    rows_[0].second->setText(tr("none — File ▸ Open, or drop a checkpoint here"));
}

QString SummaryPanel::text(const QString& field) const {
    for (const auto& [name, label] : rows_) {
        if (name == field) return label->text();
    }
    return {};
}

}  // namespace qs::gui
