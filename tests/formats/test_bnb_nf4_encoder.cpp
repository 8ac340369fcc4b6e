// "bnb-nf4" (docs/formats/bitsandbytes.md): written as transformers saves a Linear4bit, then read back by the
// bitsandbytes 4-bit codec.
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nvfp4.h"

#include "encoded_checkpoint.h"
#include "encoder_test_weights.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.2.self_attn.o_proj";

const LinearEncoder& encoder() { return encoderNamed("bnb-nf4"); }

nlohmann::json quantState(const EncodedExport& ck) {
    const auto& t = ck.tensor(kPrefix + ".weight.quant_state.bitsandbytes__nf4");
    EXPECT_EQ(t.dtype, io::DType::U8);
    std::string text(t.bytes.size(), ' ');
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(t.bytes[i]);
    return nlohmann::json::parse(text);
}

TEST(BnbNf4Encoder, DoubleQuantizedReadsBackAsDequantizeBitForBit) {
    const auto q = quant::quantizeNf4(gaussianWeight(24, 256, 31u));
    ASSERT_FALSE(q.scaleCodes.empty());
    const EncodedExport ck("bnb_double", encoder(), {{kPrefix, &q}});
    const LinearReader reader(ck.checkpoint());
    EXPECT_EQ(reader.format().format, Format::Bitsandbytes);
    EXPECT_EQ(reader.format().variant, "nf4");
    const auto d = reader.decode(kPrefix);
    expectBitIdentical(d.weight, q.dequantize());
    EXPECT_TRUE(d.partsExact);
    EXPECT_EQ(d.parts.codes, q.codes);
    EXPECT_EQ(d.parts.scaleCodes, q.scaleCodes);
    EXPECT_EQ(d.parts.scaleScales, q.scaleScales);
    EXPECT_EQ(d.parts.scaleOffset, q.scaleOffset);
    EXPECT_EQ(ck.tensor(kPrefix + ".weight.absmax").dtype, io::DType::U8);
    EXPECT_EQ(ck.tensor(kPrefix + ".weight.nested_absmax").shape, (std::vector<std::int64_t>{1}));  // 96 blocks
    EXPECT_EQ(ck.tensor(kPrefix + ".weight.nested_quant_map").shape, (std::vector<std::int64_t>{256}));
}

TEST(BnbNf4Encoder, PlainAbsmaxReadsBackAsDequantizeBitForBit) {
    const auto q = quant::quantizeNf4(gaussianWeight(8, 128, 32u), {.blockSize = 32, .doubleQuant = false});
    const EncodedExport ck("bnb_plain", encoder(), {{kPrefix, &q}});
    expectBitIdentical(LinearReader(ck.checkpoint()).decode(kPrefix).weight, q.dequantize());
    const auto& absmax = ck.tensor(kPrefix + ".weight.absmax");
    EXPECT_EQ(absmax.dtype, io::DType::F32);
    EXPECT_EQ(absmax.shape, (std::vector<std::int64_t>{32}));
    for (const auto& t : ck.tensors()) EXPECT_EQ(t.name.find("nested"), std::string::npos) << t.name;
    EXPECT_EQ(quantState(ck).at("blocksize"), 32);
    EXPECT_FALSE(quantState(ck).contains("nested_offset"));
    EXPECT_EQ(ck.quantizationConfig().at("bnb_4bit_use_double_quant"), false);
}

TEST(BnbNf4Encoder, FirstElementInTheHighNibbleOfAFlatColumn) {
    auto q = quant::quantizeNf4(gaussianWeight(2, 64, 33u));
    q.codes[0] = 0x1;
    q.codes[1] = 0xE;
    q.codes[64] = 0x9;  // row 1 continues the flat stream: byte 32
    q.codes[65] = 0x4;
    const EncodedExport ck("bnb_bits", encoder(), {{kPrefix, &q}});
    const auto& w = ck.tensor(kPrefix + ".weight");
    EXPECT_EQ(w.dtype, io::DType::U8);
    EXPECT_EQ(w.shape, (std::vector<std::int64_t>{64, 1}));
    EXPECT_EQ(std::to_integer<int>(w.bytes[0]), 0x1E);
    EXPECT_EQ(std::to_integer<int>(w.bytes[32]), 0x94);
    const auto map = storedF32(ck.tensor(kPrefix + ".weight.quant_map"));
    ASSERT_EQ(map.size(), 16u);
    EXPECT_EQ(map[0], -1.0f);
    EXPECT_EQ(map[7], 0.0f);
    EXPECT_EQ(map[15], 1.0f);
    expectBitIdentical(LinearReader(ck.checkpoint()).decode(kPrefix).weight, q.dequantize());
}

TEST(BnbNf4Encoder, QuantStateAndConfigAreWhatTransformersReads) {
    const auto q = quant::quantizeNf4(gaussianWeight(4, 128, 34u));
    const EncodedExport ck("bnb_config", encoder(), {{kPrefix, &q}});
    const auto state = quantState(ck);
    EXPECT_EQ(state.at("quant_type"), "nf4");
    EXPECT_EQ(state.at("blocksize"), 64);
    EXPECT_EQ(state.at("shape"), nlohmann::json({4, 128}));
    EXPECT_EQ(state.at("nested_blocksize"), 256);
    EXPECT_EQ(state.at("nested_dtype"), "float32");
    EXPECT_EQ(state.at("nested_offset").get<float>(), q.scaleOffset);
    EXPECT_EQ(state.at("dtype"), "float32");
    const auto& c = ck.quantizationConfig();
    EXPECT_EQ(c.at("quant_method"), "bitsandbytes");
    EXPECT_EQ(c.at("load_in_4bit"), true);
    EXPECT_EQ(c.at("_load_in_4bit"), true);
    EXPECT_EQ(c.at("load_in_8bit"), false);
    EXPECT_EQ(c.at("bnb_4bit_quant_type"), "nf4");
    EXPECT_EQ(c.at("bnb_4bit_use_double_quant"), true);
    EXPECT_EQ(c.at("bnb_4bit_compute_dtype"), "bfloat16");
    EXPECT_EQ(c.at("bnb_4bit_quant_storage"), "uint8");
    EXPECT_EQ(c.at("llm_int8_skip_modules"), nlohmann::json({"lm_head"}));
}

TEST(BnbNf4Encoder, RefusesBlocksThatStraddleRowsAndCodesThatDisagreeWithScales) {
    auto straddling = quant::quantizeNf4(gaussianWeight(4, 128, 35u));
    straddling.cols = 96;
    straddling.codes.resize(4 * 96);
    EXPECT_NE(encoder().refusal(straddling).find("in_features 96 is not a multiple of the block size 64"),
              std::string::npos)
        << encoder().refusal(straddling);
    EXPECT_THROW(encoder().encode(kPrefix, straddling), Error);
    auto tampered = quant::quantizeNf4(gaussianWeight(4, 128, 36u));
    tampered.scaleCodes[3] ^= 1;
    EXPECT_NE(encoder().refusal(tampered).find("does not decode to its scale"), std::string::npos)
        << encoder().refusal(tampered);
    const auto nv = quant::quantizeNvfp4(gaussianWeight(4, 64, 37u));
    EXPECT_NE(encoder().refusal(nv).find("quantized with nvfp4"), std::string::npos) << encoder().refusal(nv);
}

}  // namespace
}  // namespace qs::formats::test
