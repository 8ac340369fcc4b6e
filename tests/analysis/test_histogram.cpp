#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "qs/analysis/histogram.h"
#include "qs/error.h"
#include "qs/io/dtype.h"

namespace qs::analysis {
namespace {

std::vector<float> gaussianWithOutliers(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.25f, 0.02f);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    v[n / 3] = 0.9f;  // far tails on both sides, so the range is wide and the tails non-empty
    v[n / 2] = -0.7f;
    return v;
}

// The brute force: scan the edges for every value, [e_i, e_{i+1}) with max in the last bin.
std::vector<std::uint64_t> bruteForceCounts(const std::vector<float>& values, const std::vector<double>& edges) {
    std::vector<std::uint64_t> counts(edges.size() - 1, 0);
    for (const float v : values) {
        if (!std::isfinite(v)) continue;
        for (std::size_t b = 0; b + 1 < edges.size(); ++b) {
            const bool last = b + 2 == edges.size();
            if (v >= edges[b] && (v < edges[b + 1] || (last && v <= edges[b + 1]))) {
                ++counts[b];
                break;
            }
        }
    }
    return counts;
}

struct BruteMoments {
    double mean = 0, stddev = 0, min = 0, max = 0;
    std::uint64_t finite = 0;
};

BruteMoments bruteForceMoments(const std::vector<float>& values) {
    BruteMoments m;
    m.min = std::numeric_limits<double>::infinity();
    m.max = -m.min;
    double sum = 0;
    for (const float v : values) {
        if (!std::isfinite(v)) continue;
        sum += v;
        m.min = std::min<double>(m.min, v);
        m.max = std::max<double>(m.max, v);
        ++m.finite;
    }
    m.mean = sum / static_cast<double>(m.finite);
    double ss = 0;
    for (const float v : values) {
        if (std::isfinite(v)) ss += (v - m.mean) * (v - m.mean);
    }
    m.stddev = std::sqrt(ss / static_cast<double>(m.finite));
    return m;
}

TEST(Histogram, CountsMatchBruteForceAcrossChunks) {
    const std::vector<float> values = gaussianWithOutliers(200'003, 7);  // several 64 Ki chunks
    HistogramOptions options;
    options.bins = 97;
    options.tailSigma = 2.5;
    const Histogram h = computeHistogram(values, options);

    const BruteMoments m = bruteForceMoments(values);
    ASSERT_EQ(h.bins(), 97);
    ASSERT_EQ(h.edges.size(), 98u);
    EXPECT_EQ(h.edges.front(), m.min);
    EXPECT_EQ(h.edges.back(), m.max);
    EXPECT_NEAR(h.edges[50] - h.edges[49], (m.max - m.min) / 97, 1e-12);
    EXPECT_EQ(h.counts, bruteForceCounts(values, h.edges));
    EXPECT_EQ(h.count, values.size());
    EXPECT_NEAR(h.mean, m.mean, 1e-9);
    EXPECT_NEAR(h.stddev, m.stddev, 1e-9);

    std::uint64_t below = 0, above = 0;
    for (const float v : values) {
        below += v < m.mean - 2.5 * m.stddev;
        above += v > m.mean + 2.5 * m.stddev;
    }
    EXPECT_EQ(h.tailBelow, below);
    EXPECT_EQ(h.tailAbove, above);
    EXPECT_GT(below, 100u);  // a Gaussian has ~0.6 % beyond 2.5σ on each side
    EXPECT_NEAR(h.tailFraction(), static_cast<double>(below + above) / values.size(), 1e-15);
}

TEST(Histogram, LeavesOutNonFiniteValues) {
    std::vector<float> values = {1.0f, 2.0f, 3.0f, 4.0f};
    values.push_back(std::numeric_limits<float>::quiet_NaN());
    values.push_back(std::numeric_limits<float>::infinity());
    values.push_back(-std::numeric_limits<float>::infinity());
    HistogramOptions options;
    options.bins = 3;
    const Histogram h = computeHistogram(values, options);
    EXPECT_EQ(h.count, 4u);
    EXPECT_EQ(h.nonFinite, 3u);
    EXPECT_EQ(h.min, 1.0);
    EXPECT_EQ(h.max, 4.0);
    EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{1, 1, 2}));  // [1,2) [2,3) [3,4]
}

TEST(Histogram, ConstantValuesGetAUnitWideRange) {
    const std::vector<float> values(10, 5.0f);
    HistogramOptions options;
    options.bins = 4;
    const Histogram h = computeHistogram(values, options);
    EXPECT_EQ(h.edges.front(), 2.5);
    EXPECT_EQ(h.edges.back(), 7.5);
    EXPECT_EQ(h.counts, (std::vector<std::uint64_t>{0, 0, 10, 0}));
    EXPECT_EQ(h.stddev, 0.0);
    EXPECT_EQ(h.tailBelow + h.tailAbove, 0u);
}

TEST(Histogram, Bf16TensorViewMatchesItsConvertedValues) {
    const std::vector<float> source = gaussianWithOutliers(150'000, 11);
    std::vector<std::byte> bytes(source.size() * 2);
    io::convertFromF32(io::DType::BF16, source.data(), source.size(), bytes.data());
    io::TensorInfo info;
    info.name = std::string("w");  // not = "w": GCC 12 -O3 warns falsely (-Wrestrict) on that assign
    info.dtype = io::DType::BF16;
    info.shape = {300, 500};
    info.end = bytes.size();
    std::vector<float> rounded(source.size());
    io::convertToF32(io::DType::BF16, bytes.data(), rounded.size(), rounded.data());

    HistogramOptions options;
    options.bins = 64;
    const Histogram h = computeHistogram(io::TensorView(info, bytes), options);
    EXPECT_EQ(h.counts, bruteForceCounts(rounded, h.edges));
    EXPECT_EQ(h.max, bruteForceMoments(rounded).max);
}

TEST(Histogram, BinOfAgreesWithEdges) {
    const std::vector<float> values = gaussianWithOutliers(1000, 3);
    const Histogram h = computeHistogram(values);
    for (int b = 0; b < h.bins(); ++b) EXPECT_EQ(h.binOf(h.edges[static_cast<std::size_t>(b)]), b);
    EXPECT_EQ(h.binOf(h.max), h.bins() - 1);
    EXPECT_EQ(h.binOf(h.max + 1.0), -1);
    EXPECT_EQ(h.binOf(std::nan("")), -1);
}

TEST(Histogram, CancelledTokenThrows) {
    const std::vector<float> values = gaussianWithOutliers(1000, 5);
    HistogramOptions options;
    options.cancel.cancel();
    EXPECT_THROW(computeHistogram(values, options), Cancelled);
}

TEST(Histogram, RejectsBadOptions) {
    const std::vector<float> values = {1.0f, 2.0f};
    HistogramOptions options;
    options.bins = 0;
    EXPECT_THROW(computeHistogram(values, options), Error);
    options.bins = 8;
    options.tailSigma = 0.0;
    EXPECT_THROW(computeHistogram(values, options), Error);
}

TEST(Histogram, GaussianTailFraction) {
    EXPECT_NEAR(gaussianTailFraction(1.0), 0.3173105, 1e-7);
    EXPECT_NEAR(gaussianTailFraction(3.0), 0.0026998, 1e-7);
}

}  // namespace
}  // namespace qs::analysis
