#pragma once
// Spearman's rank correlation: whether a prediction orders things as the measurement does (used
// for predicted vs measured KL over a mixed-precision frontier). Ties get their average rank; the
// result is Pearson's correlation of the ranks. NaN for fewer than two pairs or a constant side.
#include <vector>

namespace qs::analysis {

double spearmanCorrelation(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace qs::analysis
