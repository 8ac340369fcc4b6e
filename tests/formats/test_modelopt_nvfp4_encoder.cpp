// "modelopt-nvfp4" (docs/formats/modelopt.md): written, then read back by the ModelOpt codec, from config.json's
// quantization_config and from hf_quant_config.json alone.
#include <gtest/gtest.h>

#include <filesystem>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/quant/nvfp4.h"

#include "encoded_checkpoint.h"
#include "encoder_test_weights.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.1.mlp.gate_proj";

const LinearEncoder& encoder() { return encoderNamed("modelopt-nvfp4"); }

TEST(ModelOptNvfp4Encoder, ReadsBackAsDequantizeBitForBit) {
    const auto q = quant::quantizeNvfp4(powerOfTwoGlobalWeight(8, 64, 11u));
    const EncodedExport ck("modelopt_exact", encoder(), {{kPrefix, &q}});
    const LinearReader reader(ck.checkpoint());
    EXPECT_EQ(reader.format().format, Format::ModelOpt);
    EXPECT_EQ(reader.format().variant, "W4A16_NVFP4");
    expectBitIdentical(reader.decode(kPrefix).weight, q.dequantize());
}

// weight_scale_2 is QuantScope's global scale itself (it multiplies), so the parts come back exactly
// for any weight; the decoded weight is ModelOpt's e2m1 * (weight_scale * weight_scale_2).
TEST(ModelOptNvfp4Encoder, WeightScale2MultipliesAndPartsComeBackExactly) {
    const auto q = quant::quantizeNvfp4(gaussianWeight(16, 96, 12u));
    const EncodedExport ck("modelopt_parts", encoder(), {{kPrefix, &q}});
    const auto& scale2 = ck.tensor(kPrefix + ".weight_scale_2");
    EXPECT_TRUE(scale2.shape.empty());
    EXPECT_EQ(storedF32(scale2).at(0), q.globalScale);
    EXPECT_LT(q.globalScale, 1e-3f);  // amax / 2688: the multiplier, not compressed-tensors' divisor
    const auto d = LinearReader(ck.checkpoint()).decode(kPrefix);
    EXPECT_EQ(d.parts.codes, q.codes);
    expectBitIdentical(d.parts.scales, q.scales);
    EXPECT_EQ(d.parts.globalScale, q.globalScale);
    expectBitIdentical(d.parts.dequantize(), q.dequantize());
}

TEST(ModelOptNvfp4Encoder, EvenElementInTheLowNibble) {
    auto q = quant::quantizeNvfp4(powerOfTwoGlobalWeight(2, 16, 13u));
    q.codes[14] = 0x7;  // 6
    q.codes[15] = 0x1;  // 0.5
    const EncodedExport ck("modelopt_bits", encoder(), {{kPrefix, &q}});
    const auto& w = ck.tensor(kPrefix + ".weight");
    EXPECT_EQ(w.dtype, io::DType::U8);
    EXPECT_EQ(w.shape, (std::vector<std::int64_t>{2, 8}));
    EXPECT_EQ(std::to_integer<int>(w.bytes[7]), 0x17);
    EXPECT_EQ(ck.tensor(kPrefix + ".weight_scale").dtype, io::DType::F8_E4M3);
}

TEST(ModelOptNvfp4Encoder, BothConfigFormsNameTheAlgorithmGroupAndExclusions) {
    const auto q = quant::quantizeNvfp4(gaussianWeight(4, 32, 14u));
    const EncodedExport ck("modelopt_config", encoder(), {{kPrefix, &q}}, {"lm_head", "model.layers.0.mlp.gate"});
    const auto& c = ck.quantizationConfig();
    EXPECT_EQ(c.at("quant_method"), "modelopt");
    EXPECT_EQ(c.at("quant_algo"), "W4A16_NVFP4");
    EXPECT_EQ(c.at("ignore"), nlohmann::json({"lm_head", "model.layers.0.mlp.gate"}));
    const auto& group = c.at("config_groups").at("group_0");
    EXPECT_EQ(group.at("weights").at("group_size"), 16);
    EXPECT_EQ(group.at("weights").at("num_bits"), 4);
    EXPECT_EQ(group.at("weights").at("type"), "float");
    EXPECT_TRUE(group.at("input_activations").is_null());

    const auto files = encoder().extraFiles(ExportScheme{{{kPrefix, &q}}, {"lm_head"}, io::DType::BF16});
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].first, "hf_quant_config.json");
    const auto& quantization = files[0].second.at("quantization");
    EXPECT_EQ(quantization.at("quant_algo"), "W4A16_NVFP4");
    EXPECT_EQ(quantization.at("group_size"), 16);
    EXPECT_EQ(quantization.at("exclude_modules"), nlohmann::json({"lm_head"}));
    EXPECT_TRUE(files[0].second.at("producer").contains("name"));
    EXPECT_TRUE(std::filesystem::exists(ck.dir() / "hf_quant_config.json"));
}

TEST(ModelOptNvfp4Encoder, RefusesWidthsOutsideWholeBlocks) {
    const auto q = quant::quantizeNvfp4(gaussianWeight(4, 24, 15u));
    EXPECT_NE(encoder().refusal(q).find("in_features 24 is not a multiple of the nvfp4 block size 16"),
              std::string::npos)
        << encoder().refusal(q);
    EXPECT_THROW(encoder().encode(kPrefix, q), Error);
    auto noGlobal = quant::quantizeNvfp4(gaussianWeight(4, 32, 16u));
    noGlobal.globalScale = 0.0f;
    EXPECT_NE(encoder().refusal(noGlobal).find("global scale"), std::string::npos) << encoder().refusal(noGlobal);
}

}  // namespace
}  // namespace qs::formats::test
