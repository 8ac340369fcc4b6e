#include "pages/serving_scales_page.h"

#include <algorithm>
#include <vector>

#include <QLabel>
#include <QVBoxLayout>

#include "qs/error.h"

#include "plots/serving_scales_plot.h"

namespace qs::gui {

ServingScalesPage::ServingScalesPage(QWidget* parent)
    : InspectorPage(parent), plot_(new ServingScalesPlot(this)), caption_(new QLabel(this)) {
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(plot_, 1);
    layout->addWidget(caption_);
    caption_->setText(captionText());
}

void ServingScalesPage::setCheckpoint(CheckpointPtr checkpoint) {
    problem_.clear();
    std::vector<formats::ServingScale> scales;
    if (checkpoint) {
        try {
            scales = formats::readServingScales(*checkpoint);
        } catch (const Error& e) {
            problem_ = QString::fromUtf8(e.what());
        }
    }
    plot_->setScales(std::move(scales));
    caption_->setText(captionText());
}

QString ServingScalesPage::captionText() const {
    if (!problem_.isEmpty()) return tr("The scales cannot be used: %1").arg(problem_);
    const auto& scales = plot_->scales();
    if (scales.empty())
        return tr(
            "This checkpoint stores no activation or KV-cache scales: its inputs stay in the model's dtype "
            "(weight-only) or are quantized at run time, and its KV cache is not calibrated.");
    std::size_t inputs = 0, cache = 0;
    const formats::ServingScale* largest = nullptr;
    std::vector<float> inputValues;
    for (const auto& s : scales) {
        const bool kv = s.kind == "k_scale" || s.kind == "v_scale";
        (kv ? cache : inputs) += 1;
        if (kv) continue;
        inputValues.push_back(s.value);
        if (!largest || s.value > largest->value) largest = &s;
    }
    QString text = tr("%1 input scales, %2 KV-cache scales.").arg(inputs).arg(cache);
    if (largest) {
        std::nth_element(inputValues.begin(), inputValues.begin() + std::ptrdiff_t(inputValues.size() / 2),
                         inputValues.end());
        const float median = inputValues[inputValues.size() / 2];
        text += tr(" Largest input scale: %1 = %2, %3× the median.")
                    .arg(QString::fromStdString(largest->tensor))
                    .arg(static_cast<double>(largest->value), 0, 'g', 4)
                    .arg(static_cast<double>(largest->value / median), 0, 'f', 1);
    }
    return text;
}

}  // namespace qs::gui
