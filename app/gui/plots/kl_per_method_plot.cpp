#include "plots/kl_per_method_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plots/series_colors.h"
#include "text/results_format.h"

namespace qs::gui {
namespace {

constexpr double kBarWidth = 0.6;
constexpr double kFloor = 1e-9;  // a KL of exactly 0 still gets a (tiny) bar on the log axis

// "gptq4 · 4.16", "rtn4 · failed"; an evaluated checkpoint, whose bits nothing counted, by its name alone.
QString tickLabel(const pipeline::MethodResult& m) {
    if (!hasKl(m)) return shortLabel(m) + QStringLiteral(" · ") + KlPerMethodPlot::tr("failed");
    // Two files side by side ("demo-q4_k_m.gguf: gguf Q4_K_M"): file and format on two short lines.
    if (!std::isfinite(m.bitsPerWeight)) return shortLabel(m).replace(QStringLiteral(": "), QStringLiteral("\n"));
    return shortLabel(m) + QStringLiteral(" · ") + bitsText(m);
}

}  // namespace

KlPerMethodPlot::KlPerMethodPlot(QWidget* parent) : PlotView(parent) {
    setTitle(tr("Mean KLD per method"));
    setDefaultFileName(QStringLiteral("kl_per_method"));
    setLogValueAxis();
    yAxis->setLabel(tr("mean KLD (nats)"));
    xAxis->setLabel(tr("method, bits per weight"));
    xAxis->setTickLabelRotation(-35);  // seven methods fit under narrow bars
    setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    setCsvProvider([this] { return csv(); });
    connect(this, &PlotView::resetViewRequested, this, &KlPerMethodPlot::resetView);
}

void KlPerMethodPlot::setResult(JobResultPtr result) {
    result_ = std::move(result);
    drawResult();
}

int KlPerMethodPlot::barCount() {
    int bars = 0;
    for (int i = 0; i < plottableCount(); ++i) {
        const auto* b = qobject_cast<QCPBars*>(plottable(i));
        bars += b && !b->data()->isEmpty();
    }
    return bars;
}

void KlPerMethodPlot::drawResult() {
    clearPlottables();
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    if (result_) {
        for (std::size_t i = 0; i < result_->methods.size(); ++i) {
            const pipeline::MethodResult& m = result_->methods[i];
            const double x = static_cast<double>(i);
            ticker->addTick(x, tickLabel(m));
            if (!hasKl(m)) continue;
            auto* bars = new QCPBars(xAxis, yAxis);
            bars->setWidth(kBarWidth);
            bars->setName(methodLabel(m));
            const QColor color = seriesColor(static_cast<int>(i));
            bars->setPen(QPen(color.darker(130)));
            bars->setBrush(color);
            bars->addData(x, std::max(m.kl.meanKld.value, kFloor));
        }
    }
    xAxis->setTicker(ticker);
    resetView();
}

void KlPerMethodPlot::resetView() {
    const int n = result_ ? static_cast<int>(result_->methods.size()) : 0;
    xAxis->setRange(-0.6, std::max(n, 1) - 0.4);
    double low = std::numeric_limits<double>::max(), high = 0.0;
    if (result_)
        for (const auto& m : result_->methods)
            if (hasKl(m)) {
                low = std::min(low, std::max(m.kl.meanKld.value, kFloor));
                high = std::max(high, m.kl.meanKld.value);
            }
    if (high <= 0.0)
        yAxis->setRange(1e-5, 1.0);
    else
        yAxis->setRange(low / 4.0, high * 4.0);
    replot();
}

QString KlPerMethodPlot::toolTipAt(double x) const {
    if (!result_) return {};
    const long i = std::lround(x);
    if (i < 0 || i >= static_cast<long>(result_->methods.size()) ||
        std::abs(x - static_cast<double>(i)) > kBarWidth / 2)
        return {};
    const pipeline::MethodResult& m = result_->methods[static_cast<std::size_t>(i)];
    if (!m.error.empty()) return tr("%1: failed — %2").arg(methodLabel(m), QString::fromStdString(m.error));
    if (!hasKl(m)) return tr("%1: not evaluated").arg(methodLabel(m));
    return tr("<b>%1</b><br>%2<br>mean KLD %3 ± %4<br>median %5, p99 %6<br>same top p %7 %")
        .arg(methodLabel(m), bitsLabel(m), klText(m.kl.meanKld.value), klText(m.kl.meanKld.uncertainty),
             klText(m.kl.kld.median), klText(m.kl.kld.p99))
        .arg(100.0 * m.kl.sameTop.value, 0, 'f', 2);
}

CsvTable KlPerMethodPlot::csv() const {
    CsvTable table{{QStringLiteral("method"), QStringLiteral("bits_per_weight"), QStringLiteral("mean_kld"),
                    QStringLiteral("mean_kld_stderr")},
                   {}};
    if (!result_) return table;
    for (const auto& m : result_->methods) {
        if (!hasKl(m)) continue;
        table.rows.append({methodLabel(m), QString::number(m.bitsPerWeight, 'g', 6),
                           QString::number(m.kl.meanKld.value, 'g', 8),
                           QString::number(m.kl.meanKld.uncertainty, 'g', 8)});
    }
    return table;
}

}  // namespace qs::gui
