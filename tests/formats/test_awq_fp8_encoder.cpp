// The AWQ gemm, fp8 and compressed-tensors FP8_DYNAMIC writers: round trips through the readers
// equal q.dequantize() bit for bit, the pinned positions (AWQ logical column 1 in bits 16-19, FP8
// scales that multiply), the config keys of docs/formats/awq.md, fp8.md, compressed-tensors.md, and refused shapes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/quant/fp8.h"
#include "qs/quant/rtn.h"

#include "encoder_roundtrip.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.mlp.up_proj";

MatrixF randomMatrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

quant::QuantizedLinear awqLike(std::int64_t rows, std::int64_t cols, int groupSize, unsigned seed = 1) {
    quant::RtnOptions o;
    o.bits = 4;
    o.groupSize = groupSize;
    auto q = quant::quantizeRtn(randomMatrix(rows, cols, seed), o);
    q.method = quant::Method::Awq;
    return q;
}

struct ReadBack {
    DecodedLinear linear;
    nlohmann::json config;
    FormatInfo info;
};

ReadBack roundTrip(const std::string& name, const LinearEncoder& encoder, const quant::QuantizedLinear& q) {
    const auto dir = writeEncoded(freshPath(name), encoder, {{kPrefix, q}});
    const auto checkpoint = io::Checkpoint::open(dir);
    ReadBack r{LinearReader(checkpoint).decode(kPrefix), readJson(dir / "config.json")["quantization_config"],
               detect(checkpoint)};
    std::filesystem::remove_all(dir);
    return r;
}

TEST(AwqEncoder, ReadsBackAsDequantize) {
    for (const int groupSize : {32, 64, 128}) {
        const auto q = withF16Scales(awqLike(72, 256, groupSize, static_cast<unsigned>(groupSize)));
        const auto r = roundTrip("awq_rt", encoderNamed("awq"), q);
        EXPECT_EQ(bitDifferences(r.linear.weight, q.dequantize()), 0) << "group " << groupSize;
        EXPECT_EQ(r.linear.parts.codes, q.codes);
        EXPECT_EQ(r.info.format, Format::Awq);
        EXPECT_EQ(r.info.variant, "gemm");
    }
}

TEST(AwqEncoder, LogicalColumnOneSitsInBits16To19) {
    auto q = awqLike(8, 32, 32);
    for (std::int64_t n = 0; n < 8; ++n)
        q.codes[static_cast<std::size_t>(n * 32)] = static_cast<std::uint8_t>(n + 1);  // input 0
    for (std::int64_t n = 0; n < 8; ++n) q.zeros(n, 0) = static_cast<float>(8 + n % 4);
    const auto tensors = encoderNamed("awq").encode(kPrefix, q);
    ASSERT_EQ(tensors[0].name, kPrefix + ".qweight");
    EXPECT_EQ(tensors[0].shape, (std::vector<std::int64_t>{32, 1}));
    std::uint32_t word = 0;  // qweight[0, 0]: outputs 0..7 of input 0 in slots holding columns 0,2,4,6,1,3,5,7
    std::memcpy(&word, tensors[0].bytes.data(), 4);
    EXPECT_EQ((word >> 16) & 0xFu, 2u);  // logical column 1 (code 2)
    EXPECT_EQ(word, 0x86427531u);
    ASSERT_EQ(tensors[1].name, kPrefix + ".qzeros");
    std::memcpy(&word, tensors[1].bytes.data(), 4);
    EXPECT_EQ(word, 0xB9B9A8A8u);  // zeros 8,9,10,11,8,9,10,11 in AWQ order, raw (no -1)
}

TEST(AwqEncoder, ConfigHoldsWhatVllmRequires) {
    const auto q = awqLike(64, 256, 128);
    const auto config = roundTrip("awq_cfg", encoderNamed("awq"), q).config;
    EXPECT_EQ(config["quant_method"], "awq");
    EXPECT_EQ(config["bits"], 4);
    EXPECT_EQ(config["group_size"], 128);
    EXPECT_EQ(config["zero_point"], true);
    EXPECT_EQ(config["version"], "gemm");
}

TEST(AwqEncoder, RefusesWhatGemmCannotHold) {
    const auto& awq = encoderNamed("awq");
    EXPECT_EQ(awq.refusal(awqLike(36, 256, 128)), "AWQ needs out_features % 8 == 0 (N=36)");
    EXPECT_EQ(awq.refusal(awqLike(64, 4100, 128)), "K=4100 is not a multiple of group size 128");
    EXPECT_NE(awq.refusal(awqLike(64, 256, -1)).find("group size"), std::string::npos);
    quant::RtnOptions o;
    o.bits = 8;
    EXPECT_NE(awq.refusal(quant::quantizeRtn(randomMatrix(64, 256, 1), o)).find("4-bit"), std::string::npos);
    auto act = awqLike(64, 256, 128);
    act.gIdx.assign(256, 0);
    for (int c = 0; c < 256; ++c) act.gIdx[static_cast<std::size_t>(c)] = 1 - c / 128;
    EXPECT_NE(awq.refusal(act).find("act-order"), std::string::npos);
    EXPECT_THROW(awq.encode(kPrefix, awqLike(36, 256, 128)), Error);
}

TEST(Fp8Encoder, BlocksReadBackAsDequantize) {
    const auto q = quant::quantizeFp8(randomMatrix(200, 300, 4), quant::Fp8Scaling::Block, 128);  // ragged edge tiles
    const auto r = roundTrip("fp8_blocks", encoderNamed("fp8"), q);
    EXPECT_EQ(bitDifferences(r.linear.weight, q.dequantize()), 0);
    EXPECT_EQ(r.linear.parts.codes, q.codes);
    EXPECT_EQ(r.info.format, Format::Fp8);
    EXPECT_EQ(r.config["quant_method"], "fp8");
    EXPECT_EQ(r.config["activation_scheme"], "dynamic");
    EXPECT_EQ(r.config["weight_block_size"], nlohmann::json({128, 128}));
}

TEST(Fp8Encoder, PerTensorReadsBackAsDequantize) {
    const auto q = quant::quantizeFp8(randomMatrix(64, 96, 5), quant::Fp8Scaling::PerTensor);
    const auto r = roundTrip("fp8_tensor", encoderNamed("fp8"), q);
    EXPECT_EQ(bitDifferences(r.linear.weight, q.dequantize()), 0);
    EXPECT_FALSE(r.config.contains("weight_block_size"));
    EXPECT_EQ(r.config["activation_scheme"], "dynamic");
}

TEST(Fp8Encoder, WeightScaleInvMultiplies) {
    auto q = quant::quantizeFp8(MatrixF::Constant(128, 128, 0.5f), quant::Fp8Scaling::Block, 128);
    q.scales(0, 0) = 4.0f;  // codes hold 448 (0x7E); stored value 448 * 4
    const auto tensors = encoderNamed("fp8").encode(kPrefix, q);
    ASSERT_EQ(tensors[1].name, kPrefix + ".weight_scale_inv");
    EXPECT_EQ(tensors[1].dtype, io::DType::F32);
    float stored = 0.0f;
    std::memcpy(&stored, tensors[1].bytes.data(), 4);
    EXPECT_EQ(stored, 4.0f);  // the multiplier itself, not 1/4
    const auto r = roundTrip("fp8_mult", encoderNamed("fp8"), q);
    EXPECT_EQ(r.linear.weight(0, 0), 448.0f * 4.0f);
}

TEST(Fp8Encoder, SendsPerChannelScalesToCompressedTensors) {
    const auto q = quant::quantizeFp8(randomMatrix(64, 96, 6), quant::Fp8Scaling::PerChannel);
    EXPECT_NE(encoderNamed("fp8").refusal(q).find("ct-fp8-dynamic"), std::string::npos);
    EXPECT_EQ(defaultEncoderFor(q).name(), "ct-fp8-dynamic");
    EXPECT_EQ(defaultEncoderFor(quant::quantizeFp8(randomMatrix(64, 96, 6))).name(), "fp8");
}

TEST(CtFp8Encoder, PerChannelReadsBackAsDequantize) {
    const auto q = quant::quantizeFp8(randomMatrix(64, 96, 7), quant::Fp8Scaling::PerChannel);
    const auto dir = writeEncoded(freshPath("ct_fp8"), encoderNamed("ct-fp8-dynamic"), {{kPrefix, q}});
    const auto checkpoint = io::Checkpoint::open(dir);
    EXPECT_EQ(checkpoint.tensor(kPrefix + ".weight_scale").shape(), (std::vector<std::int64_t>{64, 1}));
    EXPECT_EQ(checkpoint.tensor(kPrefix + ".weight").dtype(), io::DType::F8_E4M3);
    const auto d = LinearReader(checkpoint).decode(kPrefix);
    EXPECT_EQ(bitDifferences(d.weight, q.dequantize()), 0);
    const auto info = detect(checkpoint);
    EXPECT_EQ(info.format, Format::CompressedTensors);
    EXPECT_EQ(info.variant, "float-quantized");
    const auto config = readJson(dir / "config.json")["quantization_config"];
    EXPECT_EQ(config["quant_method"], "compressed-tensors");
    EXPECT_EQ(config["format"], "float-quantized");
    EXPECT_EQ(config["quantization_status"], "compressed");
    const auto& group = config["config_groups"]["group_0"];
    EXPECT_EQ(group["targets"], nlohmann::json({"Linear"}));
    EXPECT_EQ(group["weights"]["type"], "float");
    EXPECT_EQ(group["weights"]["num_bits"], 8);
    EXPECT_EQ(group["weights"]["strategy"], "channel");
    EXPECT_EQ(group["input_activations"]["dynamic"], true);
    EXPECT_EQ(group["input_activations"]["strategy"], "token");
    EXPECT_EQ(config["ignore"], nlohmann::json({"lm_head"}));
    std::filesystem::remove_all(dir);
}

TEST(CtFp8Encoder, PerTensorReadsBackAndBlocksAreRefused) {
    const auto q = quant::quantizeFp8(randomMatrix(64, 96, 8), quant::Fp8Scaling::PerTensor);
    const auto r = roundTrip("ct_fp8_tensor", encoderNamed("ct-fp8-dynamic"), q);
    EXPECT_EQ(bitDifferences(r.linear.weight, q.dequantize()), 0);
    EXPECT_EQ(r.config["config_groups"]["group_0"]["weights"]["strategy"], "tensor");
    EXPECT_NE(
        encoderNamed("ct-fp8-dynamic").refusal(quant::quantizeFp8(randomMatrix(256, 256, 9))).find("--format fp8"),
        std::string::npos);
}

TEST(EncoderRegistry, NamesEveryEncoderAndListsThemOnAnUnknownName) {
    std::vector<std::string> names;
    for (const auto* e : allEncoders()) names.emplace_back(e->name());
    for (const char* n : {"gptq", "gptq_v2", "awq", "fp8", "ct-fp8-dynamic"})
        EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    try {
        encoderNamed("exl2");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("gptq_v2"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace qs::formats::test
