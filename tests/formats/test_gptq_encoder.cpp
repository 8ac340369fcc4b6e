// The GPTQ writers ("gptq" v1, "gptq_v2"): what they write reads back through the GPTQ codec as
// exactly q.dequantize(), the pinned bits of docs/formats/gptq.md, the config keys the consumers
// require, and the shapes they refuse.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <random>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/quant/fp8.h"
#include "qs/quant/gptq.h"
#include "qs/quant/rtn.h"

#include "encoder_roundtrip.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.self_attn.q_proj";

MatrixF randomMatrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

quant::QuantizedLinear rtn(std::int64_t rows, std::int64_t cols, int bits, int groupSize, bool sym, unsigned seed = 1) {
    quant::RtnOptions o;
    o.bits = bits;
    o.groupSize = groupSize;
    o.sym = sym;
    return quant::quantizeRtn(randomMatrix(rows, cols, seed), o);
}

// Writes q, reads it back; returns the decoded linear.
DecodedLinear roundTrip(const std::string& name, const LinearEncoder& encoder, const quant::QuantizedLinear& q) {
    const auto dir = writeEncoded(freshPath(name), encoder, {{kPrefix, q}});
    const auto checkpoint = io::Checkpoint::open(dir);
    const LinearReader reader(checkpoint);
    auto d = reader.decode(kPrefix);
    std::filesystem::remove_all(dir);
    return d;
}

void expectExact(const DecodedLinear& d, const quant::QuantizedLinear& q) {
    const MatrixF expected = q.dequantize();
    ASSERT_EQ(d.weight.rows(), expected.rows());
    ASSERT_EQ(d.weight.cols(), expected.cols());
    EXPECT_EQ(bitDifferences(d.weight, expected), 0);
    EXPECT_EQ(d.parts.codes, q.codes);
    EXPECT_EQ(d.parts.bits, q.bits);
    EXPECT_EQ(d.parts.groupSize, q.groupSize);
}

struct Case {
    int bits;
    int groupSize;
    bool sym;
};

// The case as ctest names it: readable and the same in every build (gtest would print the struct's bytes,
// padding included).
void PrintTo(const Case& c, std::ostream* os) { *os << c.bits << "bit_g" << c.groupSize << (c.sym ? "_sym" : "_asym"); }

class GptqEncoderRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(GptqEncoderRoundTrip, ReadsBackAsDequantize) {
    const auto [bits, groupSize, sym] = GetParam();
    const auto q = withF16Scales(rtn(64, 256, bits, groupSize, sym));
    const auto& encoder = encoderNamed(sym ? "gptq" : "gptq_v2");
    ASSERT_EQ(encoder.refusal(q), "");
    expectExact(roundTrip("gptq_rt", encoder, q), q);
    if (sym) expectExact(roundTrip("gptq_rt_v2", encoderNamed("gptq_v2"), q), q);  // v2 holds symmetric grids too
}

INSTANTIATE_TEST_SUITE_P(BitsGroupsSymmetry, GptqEncoderRoundTrip,
                         ::testing::Values(Case{4, 128, true}, Case{4, 128, false}, Case{4, 32, true},
                                           Case{4, 64, false}, Case{4, -1, true}, Case{8, 128, true},
                                           Case{8, -1, false}, Case{8, 32, true}, Case{2, 64, false}, Case{2, 32, true},
                                           Case{3, 128, true}, Case{3, 32, false}));

TEST(GptqEncoder, ActOrderWritesGroupIndexAndReadsBack) {
    const MatrixF w = randomMatrix(64, 256, 7);
    const MatrixF x = randomMatrix(512, 256, 8);
    MatrixF h = 2.0f * x.transpose() * x / 512.0f;
    for (Eigen::Index c = 0; c < h.cols(); ++c)
        h(c, c) *= 1.0f + static_cast<float>(c % 13);  // distinct diagonal: a real permutation
    quant::GptqOptions o;
    o.bits = 4;
    o.groupSize = 32;
    o.actOrder = true;
    o.sym = true;
    const auto q = withF16Scales(quant::quantizeGptq(w, h, o));
    ASSERT_FALSE(q.gIdx.empty());
    const auto dir = writeEncoded(freshPath("gptq_act"), encoderNamed("gptq"), {{kPrefix, q}});
    const auto checkpoint = io::Checkpoint::open(dir);
    const auto gIdx = checkpoint.tensor(kPrefix + ".g_idx").toF32();
    bool sequential = true;
    for (std::int64_t c = 0; c < 256; ++c) {
        EXPECT_EQ(gIdx[static_cast<std::size_t>(c)], static_cast<float>(q.gIdx[static_cast<std::size_t>(c)]));
        sequential = sequential && q.gIdx[static_cast<std::size_t>(c)] == c / 32;
    }
    EXPECT_FALSE(sequential);
    EXPECT_EQ(readJson(dir / "config.json")["quantization_config"]["desc_act"], true);
    const auto d = LinearReader(checkpoint).decode(kPrefix);
    expectExact(d, q);
    EXPECT_EQ(d.parts.gIdx, q.gIdx);
    std::filesystem::remove_all(dir);
}

TEST(GptqEncoder, V1Symmetric4BitZerosAreAllSevens) {
    const auto q = rtn(64, 256, 4, 128, true);
    const auto dir = writeEncoded(freshPath("gptq_sevens"), encoderNamed("gptq"), {{kPrefix, q}});
    const auto checkpoint = io::Checkpoint::open(dir);
    const auto words = storedWords(checkpoint, kPrefix + ".qzeros");
    ASSERT_EQ(words.size(), 2u * 8u);  // [256/128 groups, 64*4/32]
    for (auto w : words) EXPECT_EQ(w, 0x77777777u);
    EXPECT_EQ(checkpoint.tensor(kPrefix + ".qzeros").dtype(), io::DType::I32);
    EXPECT_EQ(checkpoint.tensor(kPrefix + ".scales").dtype(), io::DType::F16);
    std::filesystem::remove_all(dir);
}

TEST(GptqEncoder, V2StoresZerosAsTheyAre) {
    const auto q = rtn(64, 256, 4, 128, true);
    const auto dir = writeEncoded(freshPath("gptq_eights"), encoderNamed("gptq_v2"), {{kPrefix, q}});
    for (auto w : storedWords(io::Checkpoint::open(dir), kPrefix + ".qzeros")) EXPECT_EQ(w, 0x88888888u);
    std::filesystem::remove_all(dir);
}

TEST(GptqEncoder, PacksTheLowestInputInTheLowestBits) {
    auto q = rtn(8, 64, 4, 32, true);
    for (std::int64_t c = 0; c < 64; ++c)
        q.codes[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c % 16);  // row 0
    const auto tensors = encoderNamed("gptq").encode(kPrefix, q);
    ASSERT_EQ(tensors[0].name, kPrefix + ".qweight");
    EXPECT_EQ(tensors[0].shape, (std::vector<std::int64_t>{8, 8}));
    std::uint32_t word0 = 0;  // qweight[0, 0]: inputs 0..7 of output 0
    std::memcpy(&word0, tensors[0].bytes.data(), 4);
    EXPECT_EQ(word0, 0x76543210u);
}

TEST(GptqEncoder, ScalesAreStoredInF16AndNothingElseChanges) {
    const auto q = rtn(64, 256, 4, 128, false, 3);
    const auto d = roundTrip("gptq_f16", encoderNamed("gptq_v2"), q);
    EXPECT_EQ(bitDifferences(d.weight, withF16Scales(q).dequantize()), 0);
    EXPECT_GT(bitDifferences(d.weight, q.dequantize()), 0);  // the f32 scales were not all f16 numbers
}

TEST(GptqEncoder, ConfigHoldsWhatTransformersAndVllmRequire) {
    const auto q = rtn(64, 256, 4, 128, true);
    const auto dir = writeEncoded(freshPath("gptq_cfg"), encoderNamed("gptq"), {{kPrefix, q}});
    const auto config = readJson(dir / "config.json")["quantization_config"];
    EXPECT_EQ(config["quant_method"], "gptq");
    EXPECT_EQ(config["bits"], 4);
    EXPECT_EQ(config["group_size"], 128);
    EXPECT_EQ(config["desc_act"], false);
    EXPECT_EQ(config["sym"], true);
    EXPECT_EQ(config["checkpoint_format"], "gptq");
    EXPECT_EQ(readJson(dir / "quantize_config.json"), config);
    const auto info = detect(io::Checkpoint::open(dir));
    EXPECT_EQ(info.format, Format::Gptq);
    EXPECT_EQ(info.variant, "gptq");
    std::filesystem::remove_all(dir);
    EXPECT_EQ(encoderNamed("gptq_v2").quantizationConfig({{{kPrefix, &q}}, {}, io::DType::BF16})["checkpoint_format"],
              "gptq_v2");
}

TEST(GptqEncoder, RefusesWhatTheLayoutCannotHold) {
    const auto& v1 = encoderNamed("gptq");
    const auto& v2 = encoderNamed("gptq_v2");
    EXPECT_EQ(v1.refusal(rtn(64, 4100, 4, 128, true)), "K=4100 is not a multiple of group size 128");
    EXPECT_NE(v1.refusal(rtn(64, 256, 4, 128, false)).find("gptq_v2"), std::string::npos);
    EXPECT_EQ(v2.refusal(rtn(64, 256, 4, 128, false)), "");
    EXPECT_EQ(v2.refusal(rtn(64, 256, 5, 128, false)), "GPTQ stores 2, 3, 4 or 8 bits, not 5");
    EXPECT_NE(v2.refusal(rtn(36, 256, 4, 128, false)).find("N=36 is not a multiple of 8"), std::string::npos);
    EXPECT_NE(v2.refusal(rtn(48, 256, 3, 128, false)).find("N=48 is not a multiple of 32"), std::string::npos);
    EXPECT_NE(v2.refusal(quant::quantizeFp8(randomMatrix(64, 256, 1))).find("not integer codes"), std::string::npos);
    EXPECT_THROW(v2.encode(kPrefix, rtn(64, 4100, 4, 128, false)), Error);
}

// Mixed schemes: the one most weights use is the model's, the others GPTQModel `dynamic` overrides
// (FORMATS.md: regex keys, "+:" positive, "-:" skipped), keyed on vLLM's fused name too.
TEST(GptqEncoder, MixedSchemesBecomeDynamicOverrides) {
    const auto small4 = rtn(64, 256, 4, 128, true), big8 = rtn(256, 256, 8, 128, true),
               small8 = rtn(64, 256, 8, 64, true);
    const std::string l0 = "model.layers.0.";
    const auto config = encoderNamed("gptq").quantizationConfig({{{l0 + "self_attn.o_proj", &small4},
                                                                  {l0 + "mlp.down_proj", &big8},
                                                                  {l0 + "mlp.gate_proj", &small8},
                                                                  {l0 + "mlp.up_proj", &small8}},
                                                                 {l0 + "self_attn.q_proj", "lm_head"},
                                                                 io::DType::BF16});
    EXPECT_EQ(config.at("bits"), 8);  // 256·256 weights at 8 bits, group 128, against 2·64·256 at group 64
    EXPECT_EQ(config.at("group_size"), 128);
    const nlohmann::json dynamic = {
        {"+:^model\\.layers\\.0\\.self_attn\\.o_proj$",
         {{"bits", 4}, {"group_size", 128}, {"desc_act", false}, {"sym", true}}},
        {"+:^model\\.layers\\.0\\.mlp\\.(gate_proj|gate_up_proj)$",
         {{"bits", 8}, {"group_size", 64}, {"desc_act", false}, {"sym", true}}},
        {"+:^model\\.layers\\.0\\.mlp\\.(up_proj|gate_up_proj)$",
         {{"bits", 8}, {"group_size", 64}, {"desc_act", false}, {"sym", true}}},
        {"-:^model\\.layers\\.0\\.self_attn\\.(q_proj|qkv_proj)$", nlohmann::json::object()}};
    EXPECT_EQ(config.at("dynamic"), dynamic) << config.dump(1);
    // One scheme: no `dynamic` at all (GPTQModel drops an empty one).
    EXPECT_FALSE(encoderNamed("gptq").quantizationConfig({{{"a", &small4}}, {}, io::DType::BF16}).contains("dynamic"));
}

TEST(GptqEncoder, ShardsOfAFusedLinearMustAgree) {
    const auto four = rtn(64, 256, 4, 128, true), eight = rtn(64, 256, 8, 128, true);
    const std::string l1 = "model.layers.1.";
    try {
        encoderNamed("gptq").quantizationConfig(
            {{{l1 + "mlp.gate_proj", &four}, {l1 + "mlp.up_proj", &eight}}, {}, io::DType::BF16});
        ADD_FAILURE() << "a split gate_up_proj was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "model.layers.1.mlp.up_proj (8-bit, group 128, sym) beside model.layers.1.mlp.gate_proj"),
                  std::string::npos)
            << e.what();
    }
    // A dense shard beside a quantized one is refused too.
    EXPECT_THROW(encoderNamed("gptq").quantizationConfig(
                     {{{l1 + "self_attn.q_proj", &four}}, {l1 + "self_attn.k_proj"}, io::DType::BF16}),
                 Error);
}

}  // namespace
}  // namespace qs::formats::test
