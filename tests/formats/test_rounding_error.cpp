// The rounding error against an original checkpoint: decoded − original per element, its RMS, and the
// one-line refusal of an original whose names or shapes differ. The expected values are computed here
// from the stored FP8 bytes with the fixture's own E4M3 decoder.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/rounding_error.h"

#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.mlp.gate_proj";
constexpr int kRows = 96, kCols = 64;

std::vector<float> originalWeights() {
    std::mt19937 rng(7u);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w(kRows * kCols);
    for (float& v : w) v = normal(rng);
    return w;
}

// FP8 per tensor: code = nearest E4M3 of w / scale (found here by scanning every code).
std::vector<std::uint8_t> fp8Codes(const std::vector<float>& w, float scale) {
    std::vector<std::uint8_t> codes(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
        float best = INFINITY;
        for (int c = 0; c < 256; ++c) {
            if ((c & 0x7F) == 0x7F) continue;
            const float err = std::abs(e4m3Value(static_cast<std::uint8_t>(c)) - w[i] / scale);
            if (err < best) best = err, codes[i] = static_cast<std::uint8_t>(c);
        }
    }
    return codes;
}

struct Pair {
    Fixture quantizedFixture{"rounding_quantized"};
    Fixture originalFixture{"rounding_original"};
    std::vector<float> original = originalWeights();
    float scale = 0.1f / 448.0f;
    std::vector<std::uint8_t> codes = fp8Codes(original, scale);

    io::Checkpoint quantized() {
        quantizedFixture.add(kPrefix + ".weight", "F8_E4M3", {kRows, kCols}, codes);
        quantizedFixture.addF32(kPrefix + ".weight_scale", {1}, {scale});
        quantizedFixture.setQuantizationConfig({{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}});
        return quantizedFixture.open();
    }
};

TEST(RoundingError, IsDecodedMinusOriginalWithItsRms) {
    Pair p;
    const io::Checkpoint q = p.quantized();
    p.originalFixture.addF32(kPrefix + ".weight", {kRows, kCols}, p.original);
    const io::Checkpoint o = p.originalFixture.open();
    const LinearReader qr(q), orr(o);
    EXPECT_NO_THROW(checkOriginal(qr.format(), q, o));

    const RoundingError e = roundingError(qr, orr, LinearRef{kPrefix});
    ASSERT_EQ(e.rows, kRows);
    ASSERT_EQ(e.cols, kCols);
    ASSERT_EQ(e.difference.size(), p.original.size());
    double sum = 0.0, originalSum = 0.0;
    for (std::size_t i = 0; i < p.original.size(); ++i) {
        const double expected = double(e4m3Value(p.codes[i])) * p.scale - p.original[i];
        ASSERT_NEAR(e.difference[i], expected, 2e-8) << "element " << i;  // f32 rounding of |w| < 0.1
        sum += expected * expected;
        originalSum += double(p.original[i]) * p.original[i];
    }
    EXPECT_NEAR(e.rms, std::sqrt(sum / double(p.original.size())), 1e-6 * e.rms);
    EXPECT_NEAR(e.originalRms, std::sqrt(originalSum / double(p.original.size())), 1e-12);
    EXPECT_GT(e.rms, 0.0);
    EXPECT_LT(e.rms, 0.1 * e.originalRms);  // 3 mantissa bits: a few percent
}

TEST(RoundingError, AnOriginalOfAnotherShapeOrWithoutTheLinearIsRefusedInOneLine) {
    Pair p;
    const io::Checkpoint q = p.quantized();
    p.originalFixture.addF32(kPrefix + ".weight", {kCols, kRows}, p.original);  // transposed
    const io::Checkpoint o = p.originalFixture.open();
    const FormatInfo format = detect(q);
    try {
        checkOriginal(format, q, o);
        FAIL() << "a transposed original was accepted";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(kPrefix + " is 96 x 64"), std::string::npos) << m;
        EXPECT_NE(m.find("64 x 96"), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
    EXPECT_THROW(roundingError(LinearReader(q), LinearReader(o), LinearRef{kPrefix}), Error);

    Fixture other("rounding_other");
    other.addF32("model.layers.0.mlp.up_proj.weight", {kRows, kCols}, p.original);
    const io::Checkpoint missing = other.open();
    try {
        checkOriginal(format, q, missing);
        FAIL() << "an original without the linear was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("has no linear " + kPrefix), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace qs::formats::test
