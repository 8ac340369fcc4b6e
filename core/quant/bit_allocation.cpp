#include "qs/quant/bit_allocation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "qs/error.h"

namespace qs::quant {

namespace {

void checkLayers(const std::vector<AllocationLayer>& layers) {
    for (const AllocationLayer& l : layers) {
        if (l.options.empty()) throw Error("bit allocation: layer " + l.name + " has no options");
        if (l.params <= 0) throw Error("bit allocation: layer " + l.name + " has no parameters");
        if (l.options.size() > 255) throw Error("bit allocation: layer " + l.name + " has more than 255 options");
    }
}

double totalParams(const std::vector<AllocationLayer>& layers) {
    double t = 0;
    for (const AllocationLayer& l : layers) t += static_cast<double>(l.params);
    return t;
}

// Each layer's options in increasing bpw (ties: lower error first).
std::vector<std::vector<int>> byBpw(const std::vector<AllocationLayer>& layers) {
    std::vector<std::vector<int>> order;
    for (const AllocationLayer& l : layers) {
        std::vector<int> o(l.options.size());
        std::iota(o.begin(), o.end(), 0);
        std::stable_sort(o.begin(), o.end(), [&l](int a, int b) {
            const AllocationOption &x = l.options[static_cast<std::size_t>(a)],
                                   &y = l.options[static_cast<std::size_t>(b)];
            return x.bitsPerWeight < y.bitsPerWeight || (x.bitsPerWeight == y.bitsPerWeight && x.error < y.error);
        });
        order.push_back(std::move(o));
    }
    return order;
}

const AllocationOption& option(const std::vector<AllocationLayer>& layers, std::size_t i, int j) {
    return layers[i].options[static_cast<std::size_t>(j)];
}

// max over λ ≥ 0 of Σ_i min_j p_i (e_ij + λ b_ij) - λ·budget: a concave function of λ, by ternary search.
double lagrangianBound(const std::vector<AllocationLayer>& layers, double budgetBits) {
    auto dual = [&](double lambda) {
        double v = -lambda * budgetBits;
        for (const AllocationLayer& l : layers) {
            double best = std::numeric_limits<double>::infinity();
            for (const AllocationOption& o : l.options) best = std::min(best, o.error + lambda * o.bitsPerWeight);
            v += static_cast<double>(l.params) * best;
        }
        return v;
    };
    double hi = 1.0;
    for (const AllocationLayer& l : layers)
        for (const AllocationOption& a : l.options)
            for (const AllocationOption& b : l.options)
                if (b.bitsPerWeight > a.bitsPerWeight)
                    hi = std::max(hi, 2.0 * (a.error - b.error) / (b.bitsPerWeight - a.bitsPerWeight));
    double lo = 0.0;
    for (int it = 0; it < 200; ++it) {
        const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
        if (dual(m1) < dual(m2))
            lo = m1;
        else
            hi = m2;
    }
    return std::max(dual(0.0), dual(0.5 * (lo + hi)));
}

}  // namespace

Allocation evaluateAllocation(const std::vector<AllocationLayer>& layers, const std::vector<int>& choice) {
    if (choice.size() != layers.size()) throw Error("bit allocation: one choice per layer is needed");
    Allocation a;
    a.choice = choice;
    double bits = 0, err = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const AllocationOption& o = option(layers, i, choice[i]);
        bits += static_cast<double>(layers[i].params) * o.bitsPerWeight;
        err += static_cast<double>(layers[i].params) * o.error;
    }
    const double total = totalParams(layers);
    a.averageBpw = total > 0 ? bits / total : 0.0;
    a.error = total > 0 ? err / total : 0.0;
    return a;
}

Allocation allocateGreedy(const std::vector<AllocationLayer>& layers, double targetBpw) {
    checkLayers(layers);
    const auto order = byBpw(layers);
    const double total = totalParams(layers);
    std::vector<std::size_t> pos(layers.size(), 0);  // position in `order`
    auto current = [&](std::size_t i) -> const AllocationOption& { return option(layers, i, order[i][pos[i]]); };
    while (true) {
        double bits = 0;
        for (std::size_t i = 0; i < layers.size(); ++i)
            bits += static_cast<double>(layers[i].params) * current(i).bitsPerWeight;
        std::ptrdiff_t best = -1;
        double bestGain = 0;
        for (std::size_t i = 0; i < layers.size(); ++i) {
            if (pos[i] + 1 >= order[i].size()) continue;
            const AllocationOption& next = option(layers, i, order[i][pos[i] + 1]);
            const double p = static_cast<double>(layers[i].params);
            const double extra = p * (next.bitsPerWeight - current(i).bitsPerWeight);
            if ((bits + extra) / total > targetBpw) continue;
            const double drop = p * (current(i).error - next.error);
            const double gain = extra > 0 ? drop / extra : (drop > 0 ? std::numeric_limits<double>::infinity() : 0.0);
            if (gain > bestGain) {
                bestGain = gain;
                best = static_cast<std::ptrdiff_t>(i);
            }
        }
        if (best < 0) break;
        ++pos[static_cast<std::size_t>(best)];
    }
    std::vector<int> choice(layers.size());
    for (std::size_t i = 0; i < layers.size(); ++i) choice[i] = order[i][pos[i]];
    return evaluateAllocation(layers, choice);
}

Allocation allocateExact(const std::vector<AllocationLayer>& layers, double targetBpw, std::int64_t maxStates) {
    checkLayers(layers);
    const std::size_t n = layers.size();
    const double budgetBits = targetBpw * totalParams(layers);
    // Integer costs above each layer's cheapest option, in 1/1024 bit; exact when they are integers.
    constexpr double kQuantum = 1024.0;
    bool exact = true;
    std::vector<std::vector<double>> cost(n);
    double minSum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double lo = std::numeric_limits<double>::infinity();
        for (const AllocationOption& o : layers[i].options) lo = std::min(lo, o.bitsPerWeight);
        minSum += static_cast<double>(layers[i].params) * lo;
        for (const AllocationOption& o : layers[i].options) {
            const double k = static_cast<double>(layers[i].params) * (o.bitsPerWeight - lo) * kQuantum;
            if (std::fabs(k - std::round(k)) > 1e-6 * std::max(1.0, k)) exact = false;
            cost[i].push_back(k);
        }
    }
    const double budget = (budgetBits - minSum) * kQuantum;
    if (budget < -1e-6 * std::max(1.0, std::fabs(budgetBits * kQuantum))) {  // even the cheapest options do not fit
        std::vector<int> cheapest(n);
        for (std::size_t i = 0; i < n; ++i) cheapest[i] = byBpw(layers)[i][0];
        Allocation a = evaluateAllocation(layers, cheapest);
        a.lowerBound = lagrangianBound(layers, budgetBits) / totalParams(layers);
        return a;
    }
    std::int64_t unit = 1;
    if (exact) {
        std::int64_t g = 0;
        for (const auto& c : cost)
            for (double k : c) g = std::gcd(g, static_cast<std::int64_t>(std::llround(k)));
        unit = std::max<std::int64_t>(g, 1);
    }
    double unitD = static_cast<double>(unit);
    std::int64_t capacity = static_cast<std::int64_t>(std::floor(std::max(budget, 0.0) / unitD + 1e-9));
    const std::int64_t maxCapacity =
        std::max<std::int64_t>(maxStates / static_cast<std::int64_t>(std::max<std::size_t>(n, 1)), 1);
    if (!exact || capacity > maxCapacity) {  // coarser grid, costs rounded up: still within budget
        exact = false;
        capacity = std::min(capacity, maxCapacity);
        unitD = std::max(budget, 1.0) / static_cast<double>(std::max<std::int64_t>(capacity, 1));
    }
    std::vector<std::vector<std::int64_t>> units(n);
    for (std::size_t i = 0; i < n; ++i)
        for (double k : cost[i])
            units[i].push_back(exact ? std::llround(k / unitD)
                                     : static_cast<std::int64_t>(std::ceil(k / unitD - 1e-9)));

    const std::size_t width = static_cast<std::size_t>(capacity) + 1;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> dp(width, 0.0), next(width);
    std::vector<std::uint8_t> pick(n * width);
    for (std::size_t i = 0; i < n; ++i) {
        const double p = static_cast<double>(layers[i].params);
#pragma omp parallel for schedule(static)
        for (std::size_t c = 0; c < width; ++c) {
            double best = inf;
            std::uint8_t arg = 0;
            for (std::size_t j = 0; j < units[i].size(); ++j) {
                const std::int64_t u = units[i][j];
                if (u > static_cast<std::int64_t>(c)) continue;
                const double v = dp[c - static_cast<std::size_t>(u)] + p * layers[i].options[j].error;
                if (v < best) {
                    best = v;
                    arg = static_cast<std::uint8_t>(j);
                }
            }
            next[c] = best;
            pick[i * width + c] = arg;
        }
        dp.swap(next);
    }
    std::vector<int> choice(n);
    std::size_t c = width - 1;
    for (std::size_t i = n; i-- > 0;) {
        choice[i] = pick[i * width + c];
        c -= static_cast<std::size_t>(units[i][static_cast<std::size_t>(choice[i])]);
    }
    Allocation a = evaluateAllocation(layers, choice);
    a.exact = exact;
    a.lowerBound = lagrangianBound(layers, budgetBits) / totalParams(layers);
    return a;
}

}  // namespace qs::quant
