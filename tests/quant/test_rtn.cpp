// RTN against the reference AutoAWQ quantizer (bit for bit) and the grid rules' edge cases.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/safetensors_file.h"
#include "qs/quant/hessian.h"
#include "qs/quant/output_error.h"
#include "qs/quant/rtn.h"

#include "quant_test_data.h"

using namespace qs;
using namespace qs::quant;

namespace {

MatrixF randomMatrix(std::int64_t rows, std::int64_t cols, unsigned seed, float sd = 0.02f) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> n(0.0f, sd);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = n(gen);
    return m;
}

}  // namespace

TEST(Rtn, MatchesSeedAutoAwqQuantizerBitForBit) {
    const auto file = qs::quant::testing::seedReference();
    const MatrixF w = file.tensor("W").toMatrix();
    const MatrixF x = file.tensor("X").toMatrix();
    const MatrixF codes = file.tensor("rtn_g128.codes").toMatrix();
    const MatrixF scale = file.tensor("rtn_g128.scale").toMatrix();
    const MatrixF offset = file.tensor("rtn_g128.offset").toMatrix();

    const QuantizedLinear q = quantizeRtn(w, {.bits = 4, .groupSize = 128, .sym = false, .rule = GridRule::AutoAwq});
    ASSERT_EQ(q.scales.rows(), 128);
    ASSERT_EQ(q.scales.cols(), 4);
    std::int64_t codeMismatch = 0;
    for (std::int64_t r = 0; r < w.rows(); ++r)
        for (std::int64_t c = 0; c < w.cols(); ++c)
            codeMismatch +=
                q.codes[static_cast<std::size_t>(r * w.cols() + c)] != static_cast<std::uint8_t>(codes(r, c));
    EXPECT_EQ(codeMismatch, 0);
    for (std::int64_t r = 0; r < 128; ++r)
        for (std::int64_t g = 0; g < 4; ++g) {
            ASSERT_EQ(q.scales(r, g), scale(r, g)) << r << "," << g;
            ASSERT_EQ(-(q.zeros(r, g) * q.scales(r, g)), offset(r, g)) << r << "," << g;
        }
    // The reference figure (docs/reference-algorithms.md): mean over tokens and outputs of (X Qᵀ - X Wᵀ)².
    const OutputError e = outputErrorFromInputs(w, q.dequantize(), x);
    EXPECT_NEAR(e.mse, qs::quant::testing::seedFigure("rtn_g128_output_mse"),
                1e-4 * qs::quant::testing::seedFigure("rtn_g128_output_mse"));
    // ... and the same number from H alone.
    const MatrixF h = file.tensor("H").toMatrix();
    const QuantizedLinear qh = quantizeRtn(w, {.bits = 4, .groupSize = 128}, &h);
    EXPECT_NEAR(qh.outputMse, e.mse, 1e-4 * e.mse);
    EXPECT_NEAR(qh.outputError, e.relative, 1e-4 * e.relative);
}

TEST(Rtn, PartialLastGroupUsesOnlyItsColumns) {
    const MatrixF w = randomMatrix(5, 200, 3);
    const QuantizedLinear q = quantizeRtn(w, {.bits = 4, .groupSize = 64});
    ASSERT_EQ(q.scales.cols(), 4);  // 64 + 64 + 64 + 8
    for (std::int64_t r = 0; r < 5; ++r) {
        const auto last = w.row(r).segment(192, 8);
        EXPECT_FLOAT_EQ(q.scales(r, 3), (last.maxCoeff() - last.minCoeff()) / 15.0f);
    }
    const MatrixF dq = q.dequantize();
    for (std::int64_t r = 0; r < 5; ++r)
        for (std::int64_t c = 0; c < 200; ++c)
            EXPECT_LE(std::fabs(dq(r, c) - w(r, c)), 0.5f * q.scales(r, q.groupOf(c)) * 1.001f + 1e-7f);
    EXPECT_NEAR(q.bitsPerWeight(), 4.0 + 4.0 * (16 + 4) / 200.0, 1e-12);
}

TEST(Rtn, SymmetricAndPerRowGrids) {
    const MatrixF w = randomMatrix(4, 96, 4);
    for (int bits : {2, 3, 4, 8}) {
        const QuantizedLinear q = quantizeRtn(w, {.bits = bits, .groupSize = -1, .sym = true});
        ASSERT_EQ(q.scales.cols(), 1);
        const float half = static_cast<float>(1 << (bits - 1));
        for (std::int64_t r = 0; r < 4; ++r) {
            EXPECT_EQ(q.zeros(r, 0), half);
            EXPECT_FLOAT_EQ(q.scales(r, 0), w.row(r).cwiseAbs().maxCoeff() / (half - 1.0f));
        }
        EXPECT_NEAR(q.bitsPerWeight(), bits + 16.0 / 96.0, 1e-12);  // no zero stored for symmetric
    }
}

TEST(Rtn, AutoGptqRuleWidensTheRangeToZero) {
    EXPECT_FLOAT_EQ(gridParams(0.1f, 0.5f, 4, false, GridRule::AutoGptq).scale, 0.5f / 15.0f);
    EXPECT_EQ(gridParams(0.1f, 0.5f, 4, false, GridRule::AutoGptq).zero, 0.0f);
    EXPECT_EQ(gridParams(-0.6f, -0.3f, 4, false, GridRule::AutoGptq).zero, 15.0f);
    const GridParams zeroRange = gridParams(0.0f, 0.0f, 4, false, GridRule::AutoGptq);  // [-1, 1]
    EXPECT_FLOAT_EQ(zeroRange.scale, 2.0f / 15.0f);
    EXPECT_EQ(zeroRange.zero, 7.0f);  // 1 / f32(2/15) = 7.4999996 in f32, as in torch
    const GridParams sym = gridParams(-0.2f, 0.6f, 4, true, GridRule::AutoGptq);
    EXPECT_FLOAT_EQ(sym.scale, 1.2f / 15.0f);
    EXPECT_EQ(sym.zero, 8.0f);
    // AutoAWQ keeps the data's own range: the positive group gets a zero of -round(0.1/scale) -> 0 clamp
    const GridParams awq = gridParams(0.1f, 0.5f, 4, false, GridRule::AutoAwq);
    EXPECT_FLOAT_EQ(awq.scale, 0.4f / 15.0f);
    EXPECT_EQ(awq.zero, 0.0f);
}

TEST(Rtn, ClipSearchLowersCalibrationErrorOnHeavyTails) {
    std::mt19937 gen(9);
    std::student_t_distribution<float> t(2.0f);
    MatrixF w(64, 256);
    for (std::int64_t i = 0; i < w.size(); ++i) w.data()[i] = 0.01f * t(gen);
    const MatrixF x = randomMatrix(512, 256, 10, 1.0f);
    const MatrixF h = hessian(x);
    const QuantizedLinear plain = quantizeRtn(w, {.bits = 3, .groupSize = 128}, &h);
    const QuantizedLinear clipped = quantizeRtn(w, {.bits = 3, .groupSize = 128, .clipSearch = true}, &h);
    EXPECT_LT(clipped.outputMse, 0.9 * plain.outputMse);
    const OutputError direct = outputErrorFromInputs(w, clipped.dequantize(), x);
    EXPECT_NEAR(clipped.outputMse, direct.mse, 1e-3 * direct.mse);
}

// quantizeCode's rounding is std::nearbyint's, bit for bit: ties to even, -0, the ends of the exact
// range, integers beyond it, infinities and NaN, and a sweep of quotients as GPTQ and RTN form them.
TEST(Rtn, NearestIntegerIsNearbyint) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> xs = {0.0f,        -0.0f,      0.5f,        1.5f,         2.5f,  -0.5f,
                             -1.5f,       -2.5f,      0.49999997f, -0.49999997f, 7.5f,  8388607.5f,
                             -8388607.5f, 8388608.0f, 8388609.0f,  16777217.0f,  1e30f, -1e30f,
                             1e-40f,      -1e-40f,    inf,         -inf};
    std::mt19937 gen(4);
    std::uniform_real_distribution<float> u(-300.0f, 300.0f);
    for (int i = 0; i < 100000; ++i) xs.push_back(u(gen) / 0.37f);
    for (int i = -64; i <= 64; ++i) xs.push_back(static_cast<float>(i) / 2.0f);
    for (const float x : xs) {
        const float a = nearestInteger(x), b = std::nearbyint(x);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(a), std::bit_cast<std::uint32_t>(b)) << x;
    }
    EXPECT_TRUE(std::isnan(nearestInteger(std::numeric_limits<float>::quiet_NaN())));
}
