// Bit allocation: the lesson's example 7 with the greedy rule, and the exact solver against brute force.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qs/quant/bit_allocation.h"

using namespace qs::quant;

namespace {

// Example 7: the 7 matrices of a 7B-class block, error = sensitivity * 4^-bits per weight.
std::vector<AllocationLayer> lessonBlock() {
    const char* names[] = {"attn_q", "attn_k", "attn_v", "attn_o", "ffn_gate", "ffn_up", "ffn_down"};
    const std::int64_t params[] = {16, 4, 4, 16, 56, 56, 56};  // millions
    const double sens[] = {1.0, 1.0, 8.0, 2.0, 0.5, 0.5, 6.0};
    std::vector<AllocationLayer> layers;
    for (int i = 0; i < 7; ++i) {
        AllocationLayer l{names[i], params[i] * 1'000'000, {}};
        for (double b : {2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0})
            l.options.push_back({b, sens[i] * std::pow(4.0, -b), ""});
        layers.push_back(l);
    }
    return layers;
}

double bruteForceBest(const std::vector<AllocationLayer>& layers, double target) {
    double total = 0;
    for (const auto& l : layers) total += static_cast<double>(l.params);
    double best = std::numeric_limits<double>::infinity();
    std::vector<int> c(layers.size(), 0);
    while (true) {
        double bits = 0, err = 0;
        for (std::size_t i = 0; i < layers.size(); ++i) {
            bits +=
                static_cast<double>(layers[i].params) * layers[i].options[static_cast<std::size_t>(c[i])].bitsPerWeight;
            err += static_cast<double>(layers[i].params) * layers[i].options[static_cast<std::size_t>(c[i])].error;
        }
        if (bits / total <= target + 1e-12) best = std::min(best, err / total);
        std::size_t i = 0;
        while (i < layers.size() && ++c[i] == static_cast<int>(layers[i].options.size())) c[i++] = 0;
        if (i == layers.size()) break;
    }
    return best;
}

}  // namespace

TEST(BitAllocation, GreedyReproducesLessonExample7) {
    const auto layers = lessonBlock();
    const Allocation g = allocateGreedy(layers, 4.0);
    const double expectBits[] = {4.0, 5.0, 6.0, 5.0, 3.5, 3.0, 5.0};
    for (std::size_t i = 0; i < 7; ++i)
        EXPECT_EQ(layers[i].options[static_cast<std::size_t>(g.choice[i])].bitsPerWeight, expectBits[i])
            << layers[i].name;
    EXPECT_NEAR(g.averageBpw, 4.000, 5e-4);
    EXPECT_NEAR(g.error, 0.0052, 5e-5);
    const Allocation uniform = evaluateAllocation(layers, std::vector<int>(7, 4));  // 4 bits everywhere
    EXPECT_NEAR(uniform.error, 0.0089, 5e-5);
    const Allocation e = allocateExact(layers, 4.0);
    EXPECT_TRUE(e.exact);
    EXPECT_LE(e.averageBpw, 4.0 + 1e-12);
    EXPECT_LE(e.error, g.error + 1e-15);
    EXPECT_NEAR(e.error, bruteForceBest(layers, 4.0), 1e-15);
    EXPECT_LE(e.lowerBound, e.error + 1e-15);
    std::printf("example 7: greedy %.3f bpw error %.5f, exact %.3f bpw error %.5f (bound %.5f), uniform %.5f\n",
                g.averageBpw, g.error, e.averageBpw, e.error, e.lowerBound, uniform.error);
}

TEST(BitAllocation, ExactSolverIsOptimalOnRandomInstances) {
    std::mt19937 gen(17);
    std::uniform_int_distribution<int> paramsDist(1, 64), eighths(16, 64);
    std::uniform_real_distribution<double> u(0.2, 5.0);
    int greedyWorse = 0;
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<AllocationLayer> layers(5);
        for (auto& l : layers) {
            l.params = paramsDist(gen) * 4096;
            const double sens = u(gen);
            for (int k = 0; k < 4; ++k) {
                const double bpw = eighths(gen) / 8.0;  // 2 .. 8 bits on a 1/8 grid
                l.options.push_back({bpw, sens * std::pow(3.0 + u(gen) * 0.2, -bpw), ""});
            }
        }
        const double target = 3.0 + u(gen) / 2;
        const double best = bruteForceBest(layers, target);
        const Allocation e = allocateExact(layers, target);
        const Allocation g = allocateGreedy(layers, target);
        if (std::isinf(best)) continue;  // nothing fits
        ASSERT_TRUE(e.exact);
        EXPECT_NEAR(e.error, best, 1e-12 * best) << trial;
        EXPECT_LE(e.averageBpw, target + 1e-12);
        EXPECT_LE(e.error, g.error + 1e-12 * best);
        EXPECT_LE(e.lowerBound, e.error * (1 + 1e-9));
        greedyWorse += g.error > e.error * (1 + 1e-9);
    }
    std::printf("greedy worse than exact on %d of 200 random instances\n", greedyWorse);
}

TEST(BitAllocation, InexactCostsStayWithinBudget) {
    std::vector<AllocationLayer> layers = lessonBlock();
    for (auto& l : layers)
        for (std::size_t k = 1; k < l.options.size(); ++k)
            l.options[k].bitsPerWeight += 1.0 / 3.0;  // off the binary grid
    const Allocation e = allocateExact(layers, 4.0 + 1.0 / 3.0, 2'000'000);
    EXPECT_FALSE(e.exact);
    EXPECT_LE(e.averageBpw, 4.0 + 1.0 / 3.0 + 1e-12);
    // rounding costs up may cost the DP a sliver of budget, never more than that
    EXPECT_LE(e.error, allocateGreedy(layers, 4.0 + 1.0 / 3.0 - 0.01).error + 1e-12);
    EXPECT_LE(e.lowerBound, e.error);
}
