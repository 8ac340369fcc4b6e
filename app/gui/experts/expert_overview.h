#pragma once
// Computes the Overview's layer × expert view: the weight statistics of one expert linear of every
// expert (expert_overview_layout.h), one expert at a time (a stacked tensor's slice is read in place;
// gpt-oss MXFP4 experts are decoded one by one), with progress per expert and cancellation.
#include "qs/analysis/layer_overview.h"

#include "experts/expert_overview_layout.h"

namespace qs::gui {

// Rows are layout.layers, columns the experts ("expert 0", ...); a cell's WeightStats::tensor is the
// tensor a click selects (for stacked experts the stacked tensor, shared by the experts of a layer).
analysis::LayerOverview computeExpertOverview(const io::Checkpoint& checkpoint, const ExpertLayout& layout,
                                              const analysis::LayerOverviewOptions& options = {});

}  // namespace qs::gui
