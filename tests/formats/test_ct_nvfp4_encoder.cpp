// "ct-nvfp4" (docs/formats/compressed-tensors.md): written, then read back by the compressed-tensors codec.
#include <gtest/gtest.h>

#include <cmath>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nvfp4.h"

#include "encoded_checkpoint.h"
#include "encoder_test_weights.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.self_attn.q_proj";

const LinearEncoder& encoder() { return encoderNamed("ct-nvfp4"); }

TEST(CtNvfp4Encoder, ReadsBackAsDequantizeBitForBit) {
    const auto q = quant::quantizeNvfp4(powerOfTwoGlobalWeight(8, 64, 1u));
    ASSERT_EQ(q.globalScale, std::ldexp(1.0f, -10));
    const EncodedExport ck("ct_nvfp4_exact", encoder(), {{kPrefix, &q}});
    const LinearReader reader(ck.checkpoint());
    EXPECT_EQ(reader.format().format, Format::CompressedTensors);
    EXPECT_EQ(reader.format().variant, "nvfp4-pack-quantized");
    const auto d = reader.decode(kPrefix);
    expectBitIdentical(d.weight, q.dequantize());
    EXPECT_EQ(d.parts.codes, q.codes);
    expectBitIdentical(d.parts.scales, q.scales);
    EXPECT_EQ(d.parts.globalScale, q.globalScale);
    EXPECT_EQ(reader.format().layers.at(0).summary(), "nvfp4 g16 sym");
    EXPECT_EQ(reader.format().denseLinears, std::vector<std::string>{"lm_head"});
}

// With any other global scale the divisor is the float whose reciprocal IS QuantScope's multiplier,
// so the parts come back exactly; the weight is the consumers' e2m1 * (scale / divisor).
TEST(CtNvfp4Encoder, GlobalScaleIsStoredAsTheDivisor) {
    const auto q = quant::quantizeNvfp4(gaussianWeight(16, 128, 2u));
    const EncodedExport ck("ct_nvfp4_divisor", encoder(), {{kPrefix, &q}});
    const auto& stored = ck.tensor(kPrefix + ".weight_global_scale");
    EXPECT_EQ(stored.shape, (std::vector<std::int64_t>{1}));
    const float divisor = storedF32(stored).at(0);
    EXPECT_GT(divisor, 1000.0f);  // 2688 / amax for weights of ~0.02: a divisor, not the small multiplier
    EXPECT_EQ(1.0f / divisor, q.globalScale);
    // The reader decodes as the Job does (one function), so the export evaluates to the Job's KL.
    const auto d = LinearReader(ck.checkpoint()).decode(kPrefix);
    expectBitIdentical(d.parts.dequantize(), q.dequantize());
    expectBitIdentical(d.weight, q.dequantize());
    // compressed-tensors divides the block scale by the divisor: the last bit of some weights differs.
    MatrixF consumer(q.rows, q.cols);
    for (std::int64_t r = 0; r < q.rows; ++r)
        for (std::int64_t c = 0; c < q.cols; ++c)
            consumer(r, c) = e2m1Value(q.codes[r * q.cols + c]) * (q.scales(r, c / 16) / divisor);
    for (Eigen::Index i = 0; i < consumer.size(); ++i)
        EXPECT_NEAR(d.weight.data()[i], consumer.data()[i], std::abs(consumer.data()[i]) * 2.5e-7f) << "element " << i;
}

TEST(CtNvfp4Encoder, EvenElementInTheLowNibbleAndE4m3Scales) {
    quant::QuantizedLinear q = quant::quantizeNvfp4(powerOfTwoGlobalWeight(2, 32, 3u));
    q.codes[0] = 0x3;  // element 0: 1.5
    q.codes[1] = 0xA;  // element 1: -1
    q.scales(0, 0) = 0.5f;
    const EncodedExport ck("ct_nvfp4_bits", encoder(), {{kPrefix, &q}});
    const auto& packed = ck.tensor(kPrefix + ".weight_packed");
    EXPECT_EQ(packed.dtype, io::DType::U8);
    EXPECT_EQ(packed.shape, (std::vector<std::int64_t>{2, 16}));
    EXPECT_EQ(std::to_integer<int>(packed.bytes[0]), 0xA3);
    const auto& scale = ck.tensor(kPrefix + ".weight_scale");
    EXPECT_EQ(scale.dtype, io::DType::F8_E4M3);
    EXPECT_EQ(scale.shape, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(std::to_integer<int>(scale.bytes[0]), 0x30);  // 0.5 = 2^(6 - 7)
    const auto d = LinearReader(ck.checkpoint()).decode(kPrefix);
    EXPECT_EQ(d.weight(0, 0), 1.5f * 0.5f * q.globalScale);
    EXPECT_EQ(d.weight(0, 1), -1.0f * 0.5f * q.globalScale);
}

TEST(CtNvfp4Encoder, ConfigIsTheWeightOnlyNvfp4SchemeVllmLoads) {
    const auto q = quant::quantizeNvfp4(gaussianWeight(4, 32, 4u));
    const EncodedExport ck("ct_nvfp4_config", encoder(), {{kPrefix, &q}});
    const auto& c = ck.quantizationConfig();
    EXPECT_EQ(c.at("quant_method"), "compressed-tensors");
    EXPECT_EQ(c.at("format"), "nvfp4-pack-quantized");
    EXPECT_EQ(c.at("quantization_status"), "compressed");
    EXPECT_EQ(c.at("ignore"), nlohmann::json({"lm_head"}));
    const auto& group = c.at("config_groups").at("group_0");
    EXPECT_EQ(group.at("targets"), nlohmann::json({"Linear"}));
    EXPECT_TRUE(group.at("input_activations").is_null());
    const auto& w = group.at("weights");
    EXPECT_EQ(w.at("num_bits"), 4);
    EXPECT_EQ(w.at("type"), "float");
    EXPECT_EQ(w.at("strategy"), "tensor_group");
    EXPECT_EQ(w.at("group_size"), 16);
    EXPECT_EQ(w.at("symmetric"), true);
    for (const auto& t : ck.tensors()) EXPECT_NE(t.name, kPrefix + ".input_global_scale");
}

TEST(CtNvfp4Encoder, RefusesWidthsOutsideWholeBlocksAndOtherMethods) {
    const auto q = quant::quantizeNvfp4(gaussianWeight(4, 40, 5u));
    EXPECT_NE(encoder().refusal(q).find("in_features 40 is not a multiple of the nvfp4 block size 16"),
              std::string::npos)
        << encoder().refusal(q);
    EXPECT_THROW(encoder().encode(kPrefix, q), Error);
    try {
        encoder().encode(kPrefix, q);
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(kPrefix), std::string::npos) << e.what();
    }
    const auto mx = quant::quantizeMxfp4(gaussianWeight(4, 64, 6u));
    EXPECT_NE(encoder().refusal(mx).find("quantized with mxfp4"), std::string::npos) << encoder().refusal(mx);
    auto offGrid = quant::quantizeNvfp4(gaussianWeight(4, 32, 7u));
    offGrid.scales(1, 1) = 0.3f;
    EXPECT_NE(encoder().refusal(offGrid).find("not a non-negative E4M3 number"), std::string::npos)
        << encoder().refusal(offGrid);
    EXPECT_EQ(encoder().refusal(quant::quantizeNvfp4(gaussianWeight(4, 48, 8u))), "");
}

}  // namespace
}  // namespace qs::formats::test
