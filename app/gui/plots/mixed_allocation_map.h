#pragma once
// The layer heat map of a mixed-precision allocation: one cell per decoder layer (columns) × linear
// (rows), coloured by the method the budget gave that linear (grey: dense), with a legend of the
// methods underneath. Painted directly rather than as plot items, so that moving the budget slider
// over a 32-layer model's frontier redraws it in a few milliseconds.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <QRect>
#include <QStringList>
#include <QWidget>

#include "qs/model/layer_weights.h"
#include "qs/pipeline/mixed_methods.h"

namespace qs::gui {

class MixedAllocationMap : public QWidget {
    Q_OBJECT

public:
    explicit MixedAllocationMap(QWidget* parent = nullptr);

    // `methods` are the legend's entries in order (each keeps its colour across allocations); a
    // method of the mix that is not among them is added at the end.
    void setAllocation(const pipeline::MixedMethods& mix, const std::vector<std::string>& methods);
    void clear();

    int layerCount() const { return static_cast<int>(cells_.size()); }
    QString methodAt(int layer, std::string_view module) const;  // empty: dense (or no allocation)
    const QStringList& legend() const { return methods_; }

    // Where the legend's entries are painted (the methods, then dense), wrapped to the width.
    std::vector<QRect> legendRects() const;

    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    std::vector<QRect> legendLayout(int width) const;
    int legendHeight(int width) const;
    void fitLegend();

    int fittedLegendHeight_ = 0;
    static constexpr std::size_t kModules = model::LayerWeights::kLinearModules.size();
    std::vector<std::array<int, kModules>> cells_;  // per layer and module: index into methods_, -1 dense
    QStringList methods_;
};

}  // namespace qs::gui
