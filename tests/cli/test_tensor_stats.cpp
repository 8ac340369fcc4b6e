// qs::analysis::computeTensorStats through the core API: chunking, merging, progress and
// cancellation (the CLI tests cover the same numbers end to end).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "qs/analysis/tensor_stats.h"
#include "qs/error.h"

namespace {

using qs::analysis::computeTensorStats;
using qs::analysis::TensorStats;
using qs::analysis::TensorStatsOptions;

// A tensor and its bytes, kept together so that the view stays valid.
struct OwnedTensor {
    OwnedTensor(std::string name, std::vector<float> values) : data(values.size() * sizeof(float)) {
        std::memcpy(data.data(), values.data(), data.size());
        info.name = std::move(name);
        info.dtype = qs::io::DType::F32;
        info.shape = {static_cast<std::int64_t>(values.size())};
        info.begin = 0;
        info.end = data.size();
    }
    qs::io::TensorView view() const { return {info, data}; }

    qs::io::TensorInfo info;
    std::vector<std::byte> data;
};

std::vector<float> ramp(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919) % 1013) - 400.0f;
    return v;
}

TEST(TensorStats, ChunkSizeOnlyChangesRounding) {
    const OwnedTensor t("ramp", ramp(10007));
    TensorStatsOptions whole;
    whole.chunkElements = 1 << 20;
    const TensorStats reference = computeTensorStats(t.view(), whole);
    for (std::size_t chunk : {1u, 3u, 64u, 1000u, 10006u}) {
        TensorStatsOptions options;
        options.chunkElements = chunk;
        const TensorStats s = computeTensorStats(t.view(), options);
        EXPECT_EQ(s.count, 10007);
        EXPECT_EQ(s.min, reference.min) << chunk;
        EXPECT_EQ(s.max, reference.max) << chunk;
        EXPECT_NEAR(s.mean, reference.mean, 1e-12 * std::fabs(reference.mean)) << chunk;
        EXPECT_NEAR(s.std, reference.std, 1e-12 * reference.std) << chunk;
    }
}

TEST(TensorStats, ManyTensorsKeepTheirOrderAndAreIndependentOfThreads) {
    std::vector<OwnedTensor> owned;
    for (int i = 0; i < 20; ++i)
        owned.emplace_back("t" + std::to_string(i), ramp(static_cast<std::size_t>(100 + 37 * i)));
    owned.emplace_back("empty", std::vector<float>{});
    std::vector<qs::io::TensorView> views;
    for (const auto& t : owned) views.push_back(t.view());

    TensorStatsOptions one;
    one.threads = 1;
    one.chunkElements = 50;
    TensorStatsOptions four = one;
    four.threads = 4;
    const auto a = computeTensorStats(views, one);
    const auto b = computeTensorStats(views, four);
    ASSERT_EQ(a.size(), views.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].count, views[i].numel());
        if (a[i].count == 0) continue;  // NaN statistics, checked below
        EXPECT_EQ(a[i].mean, b[i].mean) << "bitwise identical for any thread count";
        EXPECT_EQ(a[i].std, b[i].std);
        if (i + 1 < a.size()) {
            EXPECT_EQ(a[i].mean, computeTensorStats(views[i], one).mean) << "same alone as among others";
        }
    }
    EXPECT_EQ(a.back().count, 0);
    EXPECT_TRUE(std::isnan(a.back().mean));
}

TEST(TensorStats, ReportsProgressUpToOne) {
    const OwnedTensor t("ramp", ramp(100000));
    TensorStatsOptions options;
    options.chunkElements = 1000;
    double last = 0.0;
    int calls = 0;
    options.progress = [&](const qs::Progress& p) {
        EXPECT_EQ(p.stage, "stats");
        EXPECT_GE(p.fraction, last);
        last = p.fraction;
        ++calls;
    };
    computeTensorStats(t.view(), options);
    EXPECT_GT(calls, 10);
    EXPECT_EQ(last, 1.0);
}

TEST(TensorStats, CancelledTokenThrowsCancelled) {
    const OwnedTensor t("ramp", ramp(100000));
    TensorStatsOptions options;
    options.chunkElements = 1000;
    int calls = 0;
    options.progress = [&](const qs::Progress&) {
        if (++calls == 3) options.cancel.cancel();
    };
    EXPECT_THROW(computeTensorStats(t.view(), options), qs::Cancelled);
    EXPECT_LT(calls, 50) << "stops soon after the cancel, not at the end";
}

TEST(TensorStats, BytesThatDoNotMatchTheShapeAreAnError) {
    OwnedTensor t("short", ramp(10));
    t.info.shape = {11};
    EXPECT_THROW(computeTensorStats(t.view(), {}), qs::Error);
}

}  // namespace
