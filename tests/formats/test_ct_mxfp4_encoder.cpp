// "ct-mxfp4" (docs/formats/compressed-tensors.md): written, then read back by the compressed-tensors codec.
#include <gtest/gtest.h>

#include <cmath>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nvfp4.h"

#include "encoded_checkpoint.h"
#include "encoder_test_weights.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.mlp.down_proj";

const LinearEncoder& encoder() { return encoderNamed("ct-mxfp4"); }

TEST(CtMxfp4Encoder, ReadsBackAsDequantizeBitForBit) {
    const auto q = quant::quantizeMxfp4(gaussianWeight(12, 96, 21u));
    const EncodedExport ck("ct_mxfp4_exact", encoder(), {{kPrefix, &q}});
    const LinearReader reader(ck.checkpoint());
    EXPECT_EQ(reader.format().variant, "mxfp4-pack-quantized");
    const auto d = reader.decode(kPrefix);
    expectBitIdentical(d.weight, q.dequantize());
    EXPECT_EQ(d.parts.method, quant::Method::Mxfp4);
    EXPECT_EQ(d.parts.codes, q.codes);
    EXPECT_EQ(reader.format().layers.at(0).summary(), "mxfp4 g32 sym");
}

TEST(CtMxfp4Encoder, E8m0ScalesWithBias127AndEvenElementInTheLowNibble) {
    auto q = quant::quantizeMxfp4(gaussianWeight(2, 64, 22u));
    q.scales(0, 0) = std::ldexp(1.0f, -3);
    q.scales(1, 1) = 4.0f;
    q.codes[0] = 0x2;  // 1
    q.codes[1] = 0xF;  // -6
    const EncodedExport ck("ct_mxfp4_bits", encoder(), {{kPrefix, &q}});
    const auto& scale = ck.tensor(kPrefix + ".weight_scale");
    EXPECT_EQ(scale.dtype, io::DType::U8);
    EXPECT_EQ(scale.shape, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(std::to_integer<int>(scale.bytes[0]), 124);  // 127 - 3
    EXPECT_EQ(std::to_integer<int>(scale.bytes[3]), 129);  // 127 + 2
    const auto& packed = ck.tensor(kPrefix + ".weight_packed");
    EXPECT_EQ(packed.shape, (std::vector<std::int64_t>{2, 32}));
    EXPECT_EQ(std::to_integer<int>(packed.bytes[0]), 0xF2);
    const auto d = LinearReader(ck.checkpoint()).decode(kPrefix);
    EXPECT_EQ(d.weight(0, 0), 0.125f);
    EXPECT_EQ(d.weight(0, 1), -0.75f);
}

TEST(CtMxfp4Encoder, ConfigIsTheGroup32FloatScheme) {
    const auto q = quant::quantizeMxfp4(gaussianWeight(4, 32, 23u));
    const EncodedExport ck("ct_mxfp4_config", encoder(), {{kPrefix, &q}});
    const auto& c = ck.quantizationConfig();
    EXPECT_EQ(c.at("quant_method"), "compressed-tensors");
    EXPECT_EQ(c.at("format"), "mxfp4-pack-quantized");
    EXPECT_EQ(c.at("ignore"), nlohmann::json({"lm_head"}));
    const auto& w = c.at("config_groups").at("group_0").at("weights");
    EXPECT_EQ(w.at("num_bits"), 4);
    EXPECT_EQ(w.at("type"), "float");
    EXPECT_EQ(w.at("strategy"), "group");
    EXPECT_EQ(w.at("group_size"), 32);
    for (const auto& t : ck.tensors()) EXPECT_NE(t.name, kPrefix + ".weight_global_scale");
}

TEST(CtMxfp4Encoder, RefusesWidthsOutsideWholeBlocksAndNvfp4) {
    const auto q = quant::quantizeMxfp4(gaussianWeight(4, 48, 24u));
    EXPECT_NE(encoder().refusal(q).find("in_features 48 is not a multiple of the mxfp4 block size 32"),
              std::string::npos)
        << encoder().refusal(q);
    EXPECT_THROW(encoder().encode(kPrefix, q), Error);
    const auto nv = quant::quantizeNvfp4(gaussianWeight(4, 64, 25u));
    EXPECT_NE(encoder().refusal(nv).find("quantized with nvfp4"), std::string::npos) << encoder().refusal(nv);
    auto notPowerOfTwo = quant::quantizeMxfp4(gaussianWeight(4, 64, 26u));
    notPowerOfTwo.scales(0, 1) = 0.75f;
    EXPECT_NE(encoder().refusal(notPowerOfTwo).find("E8M0"), std::string::npos) << encoder().refusal(notPowerOfTwo);
}

}  // namespace
}  // namespace qs::formats::test
