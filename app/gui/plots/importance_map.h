#pragma once
// The Importance tab's map: llama.cpp's imatrix as a layer × kind heat map (pipeline::ImatrixMap: each
// entry's mean Σx²/count, what llama-quantize weighs a column's squared error by), on a logarithmic
// colour scale, the kinds along x by their llama.cpp names (attn_q, ffn_down, ...), layer 0 on top.
// Hover gives the entry and its importance; clicking a cell asks for its linear to be selected.
#include "qs/pipeline/imatrix_map.h"

#include "plots/layer_expert_map.h"

namespace qs::gui {

class ImportanceMap : public LayerExpertMap {
    Q_OBJECT

public:
    explicit ImportanceMap(QWidget* parent = nullptr);

    void setMap(pipeline::ImatrixMap map);
    const pipeline::ImatrixMap& map() const { return map_; }
    QString toolTipAt(double x, double y) const;

protected:
    // The Hugging Face module of the cell's entry ("self_attn.q_proj"); "" when llama.cpp's name has none.
    QString moduleAt(int layer, int kind) const override;

private:
    CsvTable csv() const;

    pipeline::ImatrixMap map_;
};

}  // namespace qs::gui
