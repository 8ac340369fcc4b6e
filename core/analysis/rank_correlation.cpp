#include "qs/analysis/rank_correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "qs/error.h"

namespace qs::analysis {
namespace {

// 1-based ranks, ties sharing the mean of the ranks they span.
std::vector<double> ranks(const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&v](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
        const double mean = 0.5 * double(i + j) + 1.0;
        for (std::size_t k = i; k <= j; ++k) r[order[k]] = mean;
        i = j + 1;
    }
    return r;
}

}  // namespace

double spearmanCorrelation(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() != y.size()) throw Error("rank correlation: the two series differ in length");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (x.size() < 2) return nan;
    const auto rx = ranks(x), ry = ranks(y);
    const double n = double(x.size()), mean = (n + 1) / 2;
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxy += (rx[i] - mean) * (ry[i] - mean);
        sxx += (rx[i] - mean) * (rx[i] - mean);
        syy += (ry[i] - mean) * (ry[i] - mean);
    }
    return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : nan;
}

}  // namespace qs::analysis
