// "ct-mixed" (docs/formats/compressed-tensors.md): several schemes in one compressed-tensors config, read back by the
// compressed-tensors codec linear by linear.
#include <gtest/gtest.h>

#include <cstring>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/quant/fp8.h"
#include "qs/quant/gptq.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nvfp4.h"
#include "qs/quant/rtn.h"

#include "encoded_checkpoint.h"
#include "encoder_test_weights.h"

namespace qs::formats::test {
namespace {

const std::string kLayer = "model.layers.0.";

const LinearEncoder& encoder() { return encoderNamed("ct-mixed"); }

quant::QuantizedLinear rtn(int bits, int groupSize, bool sym, unsigned seed) {
    quant::RtnOptions o;
    o.bits = bits;
    o.groupSize = groupSize;
    o.sym = sym;
    return quant::quantizeRtn(gaussianWeight(16, 128, seed), o);
}

quant::QuantizedLinear gptqActOrder(unsigned seed) {
    const MatrixF x = gaussianWeight(256, 128, seed, 1.0f);
    const MatrixF h = 2.0f * x.transpose() * x / 256.0f;
    quant::GptqOptions o;
    o.bits = 4;
    o.groupSize = 32;
    o.actOrder = true;
    o.sym = false;
    return quant::quantizeGptq(gaussianWeight(16, 128, seed + 1), h, o);
}

std::vector<std::uint32_t> words(const EncodedTensor& t) {
    std::vector<std::uint32_t> w(t.bytes.size() / 4);
    std::memcpy(w.data(), t.bytes.data(), t.bytes.size());
    return w;
}

struct Mixed {
    quant::QuantizedLinear int4Sym = rtn(4, 32, true, 41u);
    quant::QuantizedLinear int8Channel = rtn(8, -1, false, 42u);
    quant::QuantizedLinear actOrder = gptqActOrder(43u);
    quant::QuantizedLinear fp8 = quant::quantizeFp8(gaussianWeight(16, 128, 45u), quant::Fp8Scaling::PerChannel);
    quant::QuantizedLinear nvfp4 = quant::quantizeNvfp4(powerOfTwoGlobalWeight(16, 128, 46u));
    quant::QuantizedLinear int4SymToo = rtn(4, 32, true, 47u);

    std::vector<std::pair<std::string, const quant::QuantizedLinear*>> linears() const {
        return {{kLayer + "self_attn.q_proj", &int4Sym},  {kLayer + "self_attn.k_proj", &int8Channel},
                {kLayer + "self_attn.v_proj", &actOrder}, {kLayer + "self_attn.o_proj", &fp8},
                {kLayer + "mlp.gate_proj", &nvfp4},       {kLayer + "mlp.up_proj", &int4SymToo}};
    }
};

TEST(CtMixedEncoder, EveryLinearReadsBackAsDequantizeBitForBit) {
    const Mixed m;
    ASSERT_FALSE(m.actOrder.gIdx.empty());
    const EncodedExport ck("ct_mixed_rt", encoder(), m.linears());
    const LinearReader reader(ck.checkpoint());
    EXPECT_EQ(reader.format().format, Format::CompressedTensors);
    EXPECT_EQ(reader.format().variant, "mixed-precision");
    for (const auto& [prefix, q] : m.linears()) {
        SCOPED_TRACE(prefix);
        const auto d = reader.decode(prefix);
        expectBitIdentical(d.weight, q->dequantize());
        EXPECT_EQ(d.parts.codes, q->codes);
    }
    EXPECT_EQ(reader.decode(kLayer + "self_attn.v_proj").parts.gIdx, m.actOrder.gIdx);
    EXPECT_FALSE(reader.format().uniformScheme().has_value());
    EXPECT_EQ(reader.format().layers.size(), 6u);
}

TEST(CtMixedEncoder, ConfigGroupsTargetModuleNamesAndShareIdenticalSchemes) {
    const Mixed m;
    const EncodedExport ck("ct_mixed_cfg", encoder(), m.linears());
    const auto& c = ck.quantizationConfig();
    EXPECT_EQ(c.at("quant_method"), "compressed-tensors");
    EXPECT_EQ(c.at("format"), "mixed-precision");
    EXPECT_EQ(c.at("ignore"), nlohmann::json({"lm_head"}));
    const auto& groups = c.at("config_groups");
    ASSERT_EQ(groups.size(), 5u);
    EXPECT_EQ(groups.at("group_0").at("targets"),
              nlohmann::json({kLayer + "self_attn.q_proj", kLayer + "mlp.up_proj"}));
    EXPECT_EQ(groups.at("group_0").at("format"), "pack-quantized");
    EXPECT_EQ(groups.at("group_0").at("weights").at("symmetric"), true);
    EXPECT_EQ(groups.at("group_0").at("weights").at("group_size"), 32);
    EXPECT_EQ(groups.at("group_1").at("weights").at("strategy"), "channel");
    EXPECT_EQ(groups.at("group_1").at("weights").at("num_bits"), 8);
    EXPECT_EQ(groups.at("group_1").at("weights").at("symmetric"), false);
    EXPECT_EQ(groups.at("group_2").at("weights").at("actorder"), "group");
    EXPECT_EQ(groups.at("group_3").at("format"), "float-quantized");
    EXPECT_EQ(groups.at("group_3").at("input_activations").at("dynamic"), true);
    EXPECT_EQ(groups.at("group_4").at("format"), "nvfp4-pack-quantized");
    EXPECT_EQ(groups.at("group_4").at("targets"), nlohmann::json({kLayer + "mlp.gate_proj"}));
}

TEST(CtMixedEncoder, PackQuantizedFieldsZeroPointsAndShape) {
    Mixed m;
    m.int4Sym.codes[0] = 0x3;
    m.int4Sym.codes[1] = 0xC;
    m.int4Sym.codes[7] = 0x9;
    const EncodedExport ck("ct_mixed_bits", encoder(), m.linears());
    const std::string q = kLayer + "self_attn.q_proj", k = kLayer + "self_attn.k_proj";
    const auto& packed = ck.tensor(q + ".weight_packed");
    EXPECT_EQ(packed.dtype, io::DType::I32);
    EXPECT_EQ(packed.shape, (std::vector<std::int64_t>{16, 16}));  // 128 4-bit fields per row
    EXPECT_EQ(words(packed)[0] & 0xF000'00FFu, 0x9000'00C3u);      // element 0 in the lowest bits
    const auto& shape = ck.tensor(q + ".weight_shape");
    std::int64_t dims[2];
    std::memcpy(dims, shape.bytes.data(), 16);
    EXPECT_EQ(dims[0], 16);
    EXPECT_EQ(dims[1], 128);
    EXPECT_EQ(ck.tensor(q + ".weight_scale").shape, (std::vector<std::int64_t>{16, 4}));
    for (const auto& t : ck.tensors()) EXPECT_NE(t.name, q + ".weight_zero_point");  // symmetric: the zero is 8
    const auto& zp = ck.tensor(k + ".weight_zero_point");
    EXPECT_EQ(zp.shape, (std::vector<std::int64_t>{4, 1}));  // 16 rows of 8-bit fields packed along N
    EXPECT_EQ(words(zp)[0] & 0xFFu, static_cast<std::uint32_t>(m.int8Channel.zeros(0, 0)));
    EXPECT_EQ((words(zp)[0] >> 8) & 0xFFu, static_cast<std::uint32_t>(m.int8Channel.zeros(1, 0)));
    EXPECT_EQ(ck.tensor(k + ".weight_scale").shape, (std::vector<std::int64_t>{16, 1}));
    expectBitIdentical(LinearReader(ck.checkpoint()).decode(q).weight, m.int4Sym.dequantize());
}

TEST(CtMixedEncoder, OneSchemeNamesItsOwnFormat) {
    const auto q = rtn(4, 64, false, 48u);
    const EncodedExport ck("ct_mixed_one", encoder(), {{kLayer + "mlp.down_proj", &q}});
    EXPECT_EQ(ck.quantizationConfig().at("format"), "pack-quantized");
    expectBitIdentical(LinearReader(ck.checkpoint()).decode(kLayer + "mlp.down_proj").weight, q.dequantize());
}

TEST(CtMixedEncoder, RefusesWhatCompressedTensorsCannotHold) {
    const auto nf4 = quant::quantizeNf4(gaussianWeight(4, 64, 49u));
    EXPECT_NE(encoder().refusal(nf4).find("quantized with nf4"), std::string::npos) << encoder().refusal(nf4);
    const auto threeBit = rtn(3, 32, true, 50u);
    EXPECT_NE(encoder().refusal(threeBit).find("3-bit codes are packed differently"), std::string::npos)
        << encoder().refusal(threeBit);
    EXPECT_THROW(encoder().encode(kLayer + "mlp.down_proj", threeBit), Error);
    const auto narrowNvfp4 = quant::quantizeNvfp4(gaussianWeight(4, 40, 51u));
    EXPECT_NE(encoder().refusal(narrowNvfp4).find("not a multiple of the nvfp4 block size 16"), std::string::npos);
}

}  // namespace
}  // namespace qs::formats::test
