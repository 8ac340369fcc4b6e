// Two quantizations side by side: FP8-per-tensor checkpoints made here from one random original. Two
// identical files differ nowhere; one code changed in one linear is reported there only, with the RMS of
// A − B that one code makes; each side's error against the original is formats::roundingError's, and
// the stored bits per weight are the bytes written here over out x in.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qs/error.h"
#include "qs/formats/quantization_diff.h"
#include "qs/formats/rounding_error.h"
#include "qs/formats/stored_bits.h"

#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kGate = "model.layers.0.mlp.gate_proj";
const std::string kUp = "model.layers.0.mlp.up_proj";
constexpr int kRows = 48, kCols = 32;
constexpr float kScale = 0.1f / 448.0f;

std::vector<float> randomWeights(unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w(kRows * kCols);
    for (float& v : w) v = normal(rng);
    return w;
}

// Nearest E4M3 code of w / scale, by scanning every finite code.
std::vector<std::uint8_t> fp8Codes(const std::vector<float>& w) {
    std::vector<std::uint8_t> codes(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
        float best = INFINITY;
        for (int c = 0; c < 256; ++c) {
            if ((c & 0x7F) == 0x7F) continue;
            const float err = std::abs(e4m3Value(static_cast<std::uint8_t>(c)) - w[i] / kScale);
            if (err < best) best = err, codes[i] = static_cast<std::uint8_t>(c);
        }
    }
    return codes;
}

struct Model {
    std::vector<float> gate = randomWeights(1u);
    std::vector<float> up = randomWeights(2u);

    void writeOriginal(Fixture& f) const {
        f.addF32(kGate + ".weight", {kRows, kCols}, gate);
        f.addF32(kUp + ".weight", {kRows, kCols}, up);
    }
    // FP8 per tensor; `changeUp` moves the up projection's code `at` one step.
    void writeFp8(Fixture& f, int changeUpAt = -1) const {
        std::vector<std::uint8_t> upCodes = fp8Codes(up);
        if (changeUpAt >= 0) upCodes[static_cast<std::size_t>(changeUpAt)] ^= 1u;  // the next E4M3 value
        f.add(kGate + ".weight", "F8_E4M3", {kRows, kCols}, fp8Codes(gate));
        f.addF32(kGate + ".weight_scale", {1}, {kScale});
        f.add(kUp + ".weight", "F8_E4M3", {kRows, kCols}, upCodes);
        f.addF32(kUp + ".weight_scale", {1}, {kScale});
        f.setQuantizationConfig({{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}});
    }
};

const LinearDiff& find(const QuantizationDiff& diff, const std::string& prefix) {
    for (const LinearDiff& d : diff.linears)
        if (d.ref.prefix == prefix) return d;
    throw Error("no row " + prefix);
}

TEST(QuantizationDiff, IdenticalFilesDifferNowhereAndEachErrorIsRoundingErrors) {
    Model m;
    Fixture fa("diff_a"), fb("diff_b"), fo("diff_original");
    m.writeFp8(fa);
    m.writeFp8(fb);
    m.writeOriginal(fo);
    const io::Checkpoint a = fa.open(), b = fb.open(), o = fo.open();
    const LinearReader ra(a), rb(b), ro(o);
    int reports = 0;
    const QuantizationDiff diff = diffQuantizations(
        ra, rb, &ro, [&](const Progress&) { ++reports; }, CancelToken());
    EXPECT_TRUE(diff.withOriginal);
    ASSERT_EQ(diff.linears.size(), 2u);
    EXPECT_EQ(diff.linears[0].ref.prefix, kGate);  // by name
    EXPECT_EQ(reports, 2);
    for (const LinearDiff& d : diff.linears) {
        EXPECT_FALSE(d.differs) << d.ref.prefix;
        EXPECT_EQ(d.rmsAMinusB, 0.0);
        EXPECT_EQ(d.typeA, "fp8 per-tensor sym");
        EXPECT_EQ(d.typeB, d.typeA);
        // One byte per weight and one f32 scale: 8 + 32 / (48 x 32) bits.
        EXPECT_DOUBLE_EQ(d.bitsA, 8.0 + 32.0 / (kRows * kCols));
        EXPECT_EQ(d.bitsB, d.bitsA);
        ASSERT_TRUE(d.errorA && d.errorB);
        EXPECT_EQ(*d.errorA, roundingError(ra, ro, d.ref).rms);
        EXPECT_EQ(*d.errorB, roundingError(rb, ro, d.ref).rms);
        EXPECT_GT(*d.errorA, 0.0);
    }
}

TEST(QuantizationDiff, OneChangedCodeIsTheOnlyDifferenceReported) {
    Model m;
    Fixture fa("diff_a"), fb("diff_b");
    constexpr int kAt = 5 * kCols + 7;
    m.writeFp8(fa);
    m.writeFp8(fb, kAt);
    const io::Checkpoint a = fa.open(), b = fb.open();
    const LinearReader ra(a), rb(b);
    const QuantizationDiff diff = diffQuantizations(ra, rb, nullptr, {}, CancelToken());
    EXPECT_FALSE(diff.withOriginal);
    EXPECT_FALSE(find(diff, kGate).differs);
    const LinearDiff& up = find(diff, kUp);
    EXPECT_TRUE(up.differs);
    EXPECT_FALSE(up.errorA || up.errorB);
    // One weight moved by the step between two E4M3 values: its RMS is |step| / sqrt(out x in).
    const std::vector<std::uint8_t> codes = fp8Codes(m.up);
    const std::uint8_t code = codes[kAt];
    const double step =
        double(e4m3Value(code)) * kScale - double(e4m3Value(static_cast<std::uint8_t>(code ^ 1u))) * kScale;
    EXPECT_NEAR(up.rmsAMinusB, std::abs(step) / std::sqrt(double(kRows) * kCols), 1e-6 * std::abs(step));
    const std::vector<float> difference = roundingError(ra, rb, up.ref).difference;
    ASSERT_EQ(difference.size(), std::size_t(kRows) * kCols);
    for (std::size_t i = 0; i < difference.size(); ++i)
        EXPECT_EQ(difference[i] != 0.0f, i == std::size_t(kAt)) << "element " << i;
}

// A linear one file keeps dense is listed with its dense type and 32 bits (F32), and differs.
TEST(QuantizationDiff, ALinearLeftDenseInOneFileIsListedWithItsDenseType) {
    Model m;
    Fixture fa("diff_a"), fb("diff_partly_dense");
    m.writeFp8(fa);
    fb.add(kGate + ".weight", "F8_E4M3", {kRows, kCols}, fp8Codes(m.gate));
    fb.addF32(kGate + ".weight_scale", {1}, {kScale});
    fb.addF32(kUp + ".weight", {kRows, kCols}, m.up);
    fb.setQuantizationConfig(
        {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}, {"ignore", nlohmann::json::array({kUp})}});
    const io::Checkpoint a = fa.open(), b = fb.open();
    const LinearReader ra(a), rb(b);
    const QuantizationDiff diff = diffQuantizations(ra, rb, nullptr, {}, CancelToken());
    ASSERT_EQ(diff.linears.size(), 2u);  // quantized in either
    const LinearDiff& up = find(diff, kUp);
    EXPECT_EQ(up.typeA, "fp8 per-tensor sym");
    EXPECT_EQ(up.typeB, "dense F32");
    EXPECT_EQ(up.bitsB, 32.0);
    EXPECT_TRUE(up.differs);
    EXPECT_FALSE(find(diff, kGate).differs);
}

TEST(QuantizationDiff, AnotherModelIsRefusedInOneLineBeforeAnythingIsDecoded) {
    Model m;
    Fixture fa("diff_a"), fb("diff_other");
    m.writeFp8(fa);
    fb.add(kGate + ".weight", "F8_E4M3", {kCols, kRows}, fp8Codes(m.gate));  // transposed
    fb.addF32(kGate + ".weight_scale", {1}, {kScale});
    fb.setQuantizationConfig({{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}});
    const io::Checkpoint a = fa.open(), b = fb.open();
    const LinearReader ra(a), rb(b);
    try {
        checkSameModel(ra, rb);
        FAIL() << "another model was accepted";
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("is not a quantization of the model"), std::string::npos) << message;
        EXPECT_NE(message.find(kGate), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    EXPECT_THROW(diffQuantizations(ra, rb, nullptr, {}, CancelToken()), Error);
    EXPECT_NO_THROW(checkSameModel(ra, ra));  // the control: the same file is the same model
}

TEST(QuantizationDiff, ACancelledComparisonStops) {
    Model m;
    Fixture fa("diff_a");
    m.writeFp8(fa);
    const io::Checkpoint a = fa.open();
    const LinearReader ra(a);
    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(diffQuantizations(ra, ra, nullptr, {}, cancel), Cancelled);
}

TEST(StoredBits, CountEveryPartButTheBias) {
    Fixture f("stored_bits");
    f.addI32(kGate + ".qweight", {kCols / 8, kRows}, std::vector<std::int32_t>(kCols / 8 * kRows));
    f.addF16(kGate + ".scales", {1, kRows}, std::vector<float>(kRows, 1.0f));
    f.addF32(kGate + ".bias", {kRows}, std::vector<float>(kRows));
    f.addF32(kGate + "_other.weight", {kRows}, std::vector<float>(kRows));  // another module's
    const io::Checkpoint c = f.open();
    // 4 bits per weight in the int32 words, a 16-bit scale per row of 32 inputs.
    EXPECT_DOUBLE_EQ(storedBitsPerWeight(c, kGate, kRows, kCols), 4.0 + 16.0 / kCols);
}

}  // namespace
}  // namespace qs::formats::test
