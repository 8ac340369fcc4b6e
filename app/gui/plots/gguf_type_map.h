#pragma once
// The GGUF tab's layer × module kind map: one cell per matrix of each decoder block, coloured by its
// ggml type's bits per weight and labelled with the type's name, so that a Q4_K_M's q6_K among its
// q4_K stand out. Built on LayerExpertMap (its columns here are module kinds, not experts); hover gives
// both names and the type, a click selects the cell's tensor.
#include "models/gguf_type_grid.h"
#include "plots/layer_expert_map.h"

namespace qs::gui {

class GgufTypeMap : public LayerExpertMap {
    Q_OBJECT

public:
    explicit GgufTypeMap(QWidget* parent = nullptr);

    void setGrid(GgufTypeGrid grid);
    const GgufTypeGrid& grid() const { return grid_; }
    QString toolTipAt(double x, double y) const;
    int labelsShown() const;  // the cells' type labels drawn at the current size

protected:
    QString moduleAt(int layer, int kind) const override;

private:
    void drawGrid();
    void fitLabels();
    CsvTable csv() const;

    GgufTypeGrid grid_;
    QList<QCPItemText*> labels_;
};

}  // namespace qs::gui
