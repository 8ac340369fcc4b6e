// "quantscope-trellis" (docs/formats/trellis.md): written, then read back by QuantScope's own
// trellis codec, which must give QuantizedLinear::dequantize() bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/quant/nf4.h"
#include "qs/quant/trellis.h"

#include "encoded_checkpoint.h"
#include "encoder_test_weights.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.3.mlp.up_proj";

const LinearEncoder& encoder() { return encoderNamed("quantscope-trellis"); }

quant::QuantizedLinear trellis(std::int64_t rows, std::int64_t cols, int L, int K, int groupSize, std::uint64_t seed,
                               unsigned weightSeed) {
    quant::TrellisOptions o;
    o.L = L;
    o.K = K;
    o.groupSize = groupSize;
    o.seed = seed;
    return quant::quantizeTrellis(gaussianWeight(rows, cols, weightSeed), o);
}

std::vector<std::int64_t> int64Values(const EncodedTensor& t) {
    std::vector<std::int64_t> v(t.bytes.size() / 8);
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
}

struct Setting {
    int L, K, groupSize;
};

class TrellisEncoderRoundTrip : public ::testing::TestWithParam<Setting> {};

TEST_P(TrellisEncoderRoundTrip, ReadsBackAsDequantizeBitForBit) {
    const auto [L, K, groupSize] = GetParam();
    const auto q = trellis(6, 4 * groupSize, L, K, groupSize, 0x9E3779B97F4A7C15ull, static_cast<unsigned>(L * 10 + K));
    const EncodedExport ck("trellis_rt", encoder(), {{kPrefix, &q}});
    const LinearReader reader(ck.checkpoint());
    EXPECT_EQ(reader.format().format, Format::QuantscopeTrellis);
    EXPECT_EQ(formatName(reader.format().format), "quantscope-trellis");
    const auto d = reader.decode(kPrefix);
    expectBitIdentical(d.weight, q.dequantize());
    EXPECT_EQ(d.parts.codes, q.codes);
    EXPECT_EQ(d.parts.trellis.starts, q.trellis.starts);
    EXPECT_EQ(d.parts.trellis.rotationSeed, q.trellis.rotationSeed);
    expectBitIdentical(d.parts.scales, q.scales);
    EXPECT_EQ(reader.format().layers.at(0).scheme, "trellis");
    EXPECT_EQ(reader.format().layers.at(0).bits, K);
    EXPECT_EQ(reader.format().layers.at(0).groupSize, groupSize);
}

INSTANTIATE_TEST_SUITE_P(StateBitsBitsGroups, TrellisEncoderRoundTrip,
                         ::testing::Values(Setting{8, 2, 64}, Setting{6, 3, 32}, Setting{9, 4, 16}, Setting{5, 1, 128},
                                           Setting{16, 3, 8}));

TEST(TrellisEncoder, HeaderStartsScalesAndPackedSymbolsAreAsDocumented) {
    auto q = trellis(2, 32, 6, 3, 16, 77u, 5u);
    // Row 0, group 0: steps 1, 2, 3 hold symbols 5, 2, 7 -> stream bits 101 010 111 (LSB first).
    q.codes[1] = 5;
    q.codes[2] = 2;
    q.codes[3] = 7;
    const EncodedExport ck("trellis_bits", encoder(), {{kPrefix, &q}});
    const auto& header = ck.tensor(kPrefix + ".trellis_header");
    EXPECT_EQ(header.dtype, io::DType::I64);
    EXPECT_EQ(int64Values(header), (std::vector<std::int64_t>{2, 32, 6, 3, 16, 77}));
    const auto& starts = ck.tensor(kPrefix + ".trellis_starts");
    EXPECT_EQ(starts.dtype, io::DType::U16);
    EXPECT_EQ(starts.shape, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(std::to_integer<std::uint32_t>(starts.bytes[2]) | (std::to_integer<std::uint32_t>(starts.bytes[3]) << 8),
              q.trellis.starts[1]);
    EXPECT_EQ(ck.tensor(kPrefix + ".trellis_scales").dtype, io::DType::F16);
    const auto& codes = ck.tensor(kPrefix + ".trellis_codes");
    EXPECT_EQ(codes.dtype, io::DType::U8);
    EXPECT_EQ(codes.shape, (std::vector<std::int64_t>{2, 12}));   // 2 groups * 15 symbols * 3 bits = 90 bits
    EXPECT_EQ(std::to_integer<int>(codes.bytes[0]), 0b11010101);  // c1 c0 b2 b1 b0 a2 a1 a0 = 1 1 0 1 0 1 0 1
    EXPECT_EQ(std::to_integer<int>(codes.bytes[1]) & 1, 1);       // c2
    expectBitIdentical(LinearReader(ck.checkpoint()).decode(kPrefix).weight, q.dequantize());
}

TEST(TrellisEncoder, ConfigNamesTheMethodAndItsSharedSettings) {
    const auto a = trellis(2, 64, 8, 2, 32, 5u, 1u);
    const auto b = trellis(2, 64, 8, 2, 32, 6u, 2u);
    const EncodedExport ck("trellis_cfg", encoder(),
                           {{"model.layers.0.mlp.up_proj", &a}, {"model.layers.0.mlp.down_proj", &b}});
    const auto& c = ck.quantizationConfig();
    EXPECT_EQ(c.at("quant_method"), "quantscope-trellis");
    EXPECT_EQ(c.at("format_version"), 1);
    EXPECT_EQ(c.at("bits"), 2);
    EXPECT_EQ(c.at("state_bits"), 8);
    EXPECT_EQ(c.at("group_size"), 32);
    EXPECT_TRUE(c.at("rotation_seed").is_null());  // the two linears were rotated with different seeds
    EXPECT_EQ(c.at("rotation"), "hadamard-random-signs");
    EXPECT_EQ(c.at("modules_to_not_convert"), nlohmann::json({"lm_head"}));
    const LinearReader reader(ck.checkpoint());
    expectBitIdentical(reader.decode("model.layers.0.mlp.up_proj").weight, a.dequantize());
    expectBitIdentical(reader.decode("model.layers.0.mlp.down_proj").weight, b.dequantize());
    EXPECT_EQ(detect(ck.checkpoint()).denseLinears, std::vector<std::string>{"lm_head"});
}

TEST(TrellisEncoder, RefusesOtherMethodsAndPartsTheLayoutCannotHold) {
    const auto nf4 = quant::quantizeNf4(gaussianWeight(2, 64, 9u));
    EXPECT_NE(encoder().refusal(nf4).find("quantized with nf4"), std::string::npos) << encoder().refusal(nf4);
    auto wideScale = trellis(2, 32, 6, 2, 16, 1u, 10u);
    wideScale.scales(1, 0) = 0.1f;  // not an f16 number
    EXPECT_NE(encoder().refusal(wideScale).find("not an f16 number"), std::string::npos)
        << encoder().refusal(wideScale);
    EXPECT_THROW(encoder().encode(kPrefix, wideScale), Error);
    auto bigStart = trellis(2, 32, 6, 2, 16, 1u, 11u);
    bigStart.trellis.starts[0] = 64;
    EXPECT_NE(encoder().refusal(bigStart).find("more than 6 bits"), std::string::npos) << encoder().refusal(bigStart);
}

}  // namespace
}  // namespace qs::formats::test
