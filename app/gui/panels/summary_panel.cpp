#include "panels/summary_panel.h"

#include <map>
#include <string>

#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QStringList>

#include "qs/formats/parameter_count.h"
#include "qs/io/gguf_bits_per_weight.h"

#include "text/gguf_bits_text.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

QString dtypeBreakdown(const std::map<std::string, std::uint64_t>& bytesByDtype) {
    QStringList parts;
    for (const auto& [dtype, bytes] : bytesByDtype) {
        parts << QStringLiteral("%1 %2").arg(QString::fromStdString(dtype), humanBytes(bytes));
    }
    return parts.isEmpty() ? QStringLiteral("–") : parts.join(QStringLiteral(", "));
}

QString orDash(const std::string& s) { return s.empty() ? QStringLiteral("–") : QString::fromStdString(s); }

// "gptq_v2: int4 g128 asym × 14 linears"; a mixed checkpoint lists each scheme with its count;
// lm_head and other linears left dense are counted too.
QString quantizationText(const formats::FormatInfo& format, const std::string& declared) {
    if (format.layers.empty()) return orDash(declared);
    std::map<std::string, int> schemes;
    for (const formats::LayerQuantInfo& layer : format.layers) ++schemes[layer.summary()];
    QStringList parts;
    for (const auto& [scheme, count] : schemes)
        parts << QObject::tr("%1 × %2").arg(QString::fromStdString(scheme)).arg(count);
    QString name = QString::fromUtf8(formats::formatName(format.format).data());
    if (!format.variant.empty() && format.variant != formats::formatName(format.format))
        name += QStringLiteral(" (%1)").arg(QString::fromStdString(format.variant));
    QString text = QStringLiteral("%1: %2").arg(name, parts.join(QStringLiteral(", ")));
    if (!format.denseLinears.empty())
        text += QObject::tr("; %n linear(s) dense", nullptr, static_cast<int>(format.denseLinears.size()));
    return text;
}

}  // namespace

SummaryPanel::SummaryPanel(QWidget* parent) : QWidget(parent), form_(new QFormLayout(this)) {
    form_->setContentsMargins(8, 6, 8, 6);
    form_->setLabelAlignment(Qt::AlignRight);
    form_->setVerticalSpacing(3);
    for (const QString& field :
         {tr("Checkpoint"), tr("Architecture"), tr("Layers"), tr("Hidden size"), tr("Parameters"), tr("Tensors"),
          tr("DTypes"), tr("Size on disk"), tr("Quantization"), tr("Tokenizer")}) {
        addRow(field);
    }
    bits_ = addRow(tr("Bits per weight"));
    bits_->setToolTip(ggufBitsToolTip());
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

void SummaryPanel::setSummary(const QString& path, const io::Checkpoint& checkpoint,
                              const formats::FormatInfo& format) {
    const io::CheckpointSummary& s = checkpoint.summary();
    const QLocale locale;
    const QString architecture =
        s.modelType.empty() || s.modelType == s.architecture
            ? orDash(s.architecture)
            : QStringLiteral("%1 (%2)").arg(orDash(s.architecture), QString::fromStdString(s.modelType));
    const std::int64_t parameters = formats::modelParameterCount(checkpoint, format);
    const QStringList values = {
        QFileInfo(path).fileName(),
        architecture,
        s.numLayers > 0 ? QString::number(s.numLayers) : QStringLiteral("–"),
        s.hiddenSize > 0 ? QString::number(s.hiddenSize) : QStringLiteral("–"),
        QStringLiteral("%1 (%2)").arg(humanCount(parameters), locale.toString(qlonglong(parameters))),
        QString::number(checkpoint.tensors().size()),
        dtypeBreakdown(s.bytesByDtype),
        humanBytes(s.sizeOnDisk),
        quantizationText(format, s.quantizationFormat),
        s.hasTokenizer ? tr("yes") : tr("no"),
    };
    for (int i = 0; i < values.size(); ++i) rows_[i].second->setText(values[i]);
    // A GGUF's blocks store their scales with the codes: its bits per weight read off the file alone.
    form_->setRowVisible(bits_, checkpoint.gguf() != nullptr);
    bits_->setText(checkpoint.gguf() ? ggufBitsText(io::ggufBitsPerWeight(checkpoint)) : QStringLiteral("–"));
    rows_[0].second->setToolTip(path);
    rows_[4].second->setToolTip(parameters == s.parameterCount
                                    ? QString()
                                    : tr("Stored elements: %1 (packed codes, scales and zeros)")
                                          .arg(locale.toString(qlonglong(s.parameterCount))));
}

void SummaryPanel::clear() {
    for (auto& [field, label] : rows_) label->setText(QStringLiteral("–"));
    form_->setRowVisible(bits_, false);
    rows_[0].second->setText(tr("none — File ▸ Open, or drop a checkpoint here"));
}

QString SummaryPanel::text(const QString& field) const {
    for (const auto& [name, label] : rows_) {
        if (name == field) return label->text();
    }
    return {};
}

}  // namespace qs::gui
