// gpt-oss between its MXFP4 layout and BF16 (docs/formats/gpt-oss-mxfp4.md): `dequantize` writes the
// experts as transformers' GptOssExperts holds them ([E, in, out]); exportGptOssMxfp4 brings them back.
// Checked against the bit layout of FORMATS.md §6 and OCP's MX rounding written out in this test.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/pipeline/dense_export.h"
#include "qs/pipeline/gpt_oss_mxfp4_export.h"

#include "io_test_util.h"

namespace qs::pipeline {
namespace {

namespace fs = std::filesystem;
using qs::io::test::TempDir;

constexpr int kExperts = 4, kHidden = 64, kWidth = 32;  // gate_up: 64 inputs, 64 outputs; down: 32 inputs, 64 outputs
const std::string kGateUp = "model.layers.0.mlp.experts.gate_up_proj";
const std::string kDown = "model.layers.0.mlp.experts.down_proj";

// FORMATS.md §6: nibble -> value, bit 3 the sign.
float e2m1(int nibble) {
    static constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    return (nibble & 8 ? -1.0f : 1.0f) * kMagnitudes[nibble & 7];
}

// One expert's packed [out, in/32, 16] bytes and [out, in/32] exponents, as gpt-oss stores them.
struct Mxfp4Tensor {
    std::int64_t out = 0, in = 0;
    std::vector<std::uint8_t> blocks, scales;  // all experts

    // W_e[n, k]: byte k/2 of row n, low nibble for even k; times 2^(scale - 127).
    float value(int e, std::int64_t n, std::int64_t k) const {
        const std::size_t row = static_cast<std::size_t>(e * out + n);
        const std::uint8_t byte = blocks[row * static_cast<std::size_t>(in / 2) + static_cast<std::size_t>(k / 2)];
        const int nibble = k % 2 == 0 ? byte & 0xF : byte >> 4;
        return std::ldexp(e2m1(nibble),
                          scales[row * static_cast<std::size_t>(in / 32) + static_cast<std::size_t>(k / 32)] - 127);
    }
};

Mxfp4Tensor randomMxfp4(std::int64_t out, std::int64_t in, std::mt19937& rng) {
    Mxfp4Tensor t{out, in, std::vector<std::uint8_t>(static_cast<std::size_t>(kExperts * out * in / 2)),
                  std::vector<std::uint8_t>(static_cast<std::size_t>(kExperts * out * in / 32))};
    for (auto& b : t.blocks) b = static_cast<std::uint8_t>(rng() & 0xFF);
    for (auto& s : t.scales) s = static_cast<std::uint8_t>(118 + rng() % 16);
    // Expert 0, row 0, block 0: magnitudes of at most 1.5 (not in E2M1's top binade), so the scale a
    // quantizer chooses for it is 2^-2 of the stored one while every value stays the same.
    for (int b = 0; b < 16; ++b) t.blocks[static_cast<std::size_t>(b)] &= 0xBB;
    // Row 1, block 0: zeros of both signs.
    for (int b = 0; b < 16; ++b) t.blocks[static_cast<std::size_t>(in / 2 + b)] = b % 2 ? 0x80 : 0x08;
    return t;
}

std::span<const std::byte> bytesOf(const std::vector<std::uint8_t>& v) { return std::as_bytes(std::span(v)); }

nlohmann::json gptOssConfig() {
    return {{"model_type", "gpt_oss"},  {"architectures", {"GptOssForCausalLM"}},
            {"hidden_size", kHidden},   {"intermediate_size", kWidth},
            {"num_hidden_layers", 1},   {"num_local_experts", kExperts},
            {"num_experts_per_tok", 2}, {"vocab_size", 16},
            {"torch_dtype", "bfloat16"}};
}

// The tensors gpt-oss keeps dense, the same in every variant.
void addDenseParts(io::CheckpointWriter& w, std::mt19937& rng) {
    std::normal_distribution<float> g(0.0f, 0.05f);
    const auto values = [&](std::size_t n) {
        std::vector<float> v(n);
        for (auto& x : v) x = g(rng);
        return v;
    };
    w.addTensorF32("model.embed_tokens.weight", io::DType::BF16, {16, kHidden}, values(16 * kHidden));
    w.addTensorF32("model.layers.0.self_attn.q_proj.weight", io::DType::BF16, {kHidden, kHidden},
                   values(kHidden * kHidden));
    w.addTensorF32("model.layers.0.mlp.router.weight", io::DType::BF16, {kExperts, kHidden},
                   values(kExperts * kHidden));
    w.addTensorF32("model.layers.0.mlp.router.bias", io::DType::BF16, {kExperts}, values(kExperts));
    w.addTensorF32(kGateUp + "_bias", io::DType::BF16, {kExperts, 2 * kWidth}, values(kExperts * 2 * kWidth));
    w.addTensorF32(kDown + "_bias", io::DType::BF16, {kExperts, kHidden}, values(kExperts * kHidden));
    w.addTensorF32("model.norm.weight", io::DType::F32, {kHidden}, values(kHidden));
}

fs::path writeMxfp4GptOss(const fs::path& dir, const Mxfp4Tensor& gateUp, const Mxfp4Tensor& down) {
    std::mt19937 rng(5);
    io::CheckpointWriter w(dir);
    addDenseParts(w, rng);
    w.addTensor(kGateUp + "_blocks", io::DType::U8, {kExperts, gateUp.out, gateUp.in / 32, 16}, bytesOf(gateUp.blocks));
    w.addTensor(kGateUp + "_scales", io::DType::U8, {kExperts, gateUp.out, gateUp.in / 32}, bytesOf(gateUp.scales));
    w.addTensor(kDown + "_blocks", io::DType::U8, {kExperts, down.out, down.in / 32, 16}, bytesOf(down.blocks));
    w.addTensor(kDown + "_scales", io::DType::U8, {kExperts, down.out, down.in / 32}, bytesOf(down.scales));
    nlohmann::json config = gptOssConfig();
    config["quantization_config"] = {
        {"quant_method", "mxfp4"},
        {"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router"}}};
    w.setConfig(config);
    return w.finish();
}

// A BF16 gpt-oss with the given experts, [E, in, out] as transformers stores them.
fs::path writeBf16GptOss(const fs::path& dir, std::int64_t gateUpInputs, const std::vector<float>& gateUp,
                         const std::vector<float>& down) {
    std::mt19937 rng(6);
    io::CheckpointWriter w(dir);
    addDenseParts(w, rng);
    w.addTensorF32(kGateUp, io::DType::BF16, {kExperts, gateUpInputs, 2 * kWidth}, gateUp);
    w.addTensorF32(kDown, io::DType::BF16, {kExperts, kWidth, kHidden}, down);
    w.setConfig(gptOssConfig());
    return w.finish();
}

std::vector<std::uint8_t> bytesOf(const io::TensorView& v) {
    const auto b = v.bytes();
    return {reinterpret_cast<const std::uint8_t*>(b.data()),
            reinterpret_cast<const std::uint8_t*>(b.data() + b.size())};
}

Mxfp4Tensor readMxfp4(const io::Checkpoint& ck, const std::string& name) {
    const auto blocks = ck.tensor(name + "_blocks");
    return {blocks.shape()[1], blocks.shape()[2] * 32, bytesOf(blocks), bytesOf(ck.tensor(name + "_scales"))};
}

// The bytes of the non-expert tensors, by name.
std::map<std::string, std::vector<std::uint8_t>> denseBytes(const io::Checkpoint& ck) {
    std::map<std::string, std::vector<std::uint8_t>> out;
    for (const auto& t : ck.tensors())
        if (t.info->name.find("mlp.experts.") == std::string::npos || t.info->name.ends_with("_bias"))
            out[t.info->name] = bytesOf(ck.tensor(t.info->name));
    return out;
}

TEST(GptOssMxfp4, DequantizedExpertsAreTransformersLayoutAndComeBackAsTheSameWeights) {
    TempDir tmp;
    std::mt19937 rng(41);
    const Mxfp4Tensor gateUp = randomMxfp4(2 * kWidth, kHidden, rng), down = randomMxfp4(kHidden, kWidth, rng);
    const fs::path source = writeMxfp4GptOss(tmp.path() / "mxfp4", gateUp, down);

    const fs::path bf16 = exportDense({source, tmp.path() / "bf16"}, {}, {});
    const io::Checkpoint dense = io::Checkpoint::open(bf16);
    EXPECT_FALSE(dense.config().contains("quantization_config"));
    EXPECT_EQ(dense.find(kGateUp + "_blocks"), nullptr);
    for (const auto& [name, t] : {std::pair{kGateUp, &gateUp}, std::pair{kDown, &down}}) {
        const auto view = dense.tensor(name);
        ASSERT_EQ(view.dtype(), io::DType::BF16);
        ASSERT_EQ(view.shape(), (std::vector<std::int64_t>{kExperts, t->in, t->out}));  // x @ W: [E, in, out]
        const std::vector<float> values = view.toF32();
        for (int e = 0; e < kExperts; ++e)
            for (std::int64_t k = 0; k < t->in; ++k)
                for (std::int64_t n = 0; n < t->out; ++n)
                    ASSERT_EQ(values[static_cast<std::size_t>((e * t->in + k) * t->out + n)], t->value(e, n, k))
                        << name << " " << e << " " << k << " " << n;
    }

    const GptOssMxfp4Report report = exportGptOssMxfp4({bf16, tmp.path() / "again"}, {}, {});
    const io::Checkpoint again = io::Checkpoint::open(report.written);
    EXPECT_EQ(again.config().at("quantization_config").at("quant_method"), "mxfp4");
    EXPECT_EQ(again.config().at("quantization_config").at("modules_to_not_convert").size(), 4u);
    EXPECT_EQ(denseBytes(again), denseBytes(dense));
    ASSERT_EQ(report.tensors.size(), 2u);
    for (const auto& t : report.tensors) EXPECT_EQ(t.relativeError, 0.0) << t.tensor;  // every value was an MXFP4 value
    EXPECT_EQ(report.quantizedWeights, kExperts * (kHidden * 2 * kWidth + kWidth * kHidden));

    const io::Checkpoint sourceCheckpoint = io::Checkpoint::open(source);
    const formats::LinearReader original(sourceCheckpoint), requantized(again);
    EXPECT_EQ(requantized.format().format, formats::Format::Mxfp4);
    for (const auto& [name, t] : {std::pair{kGateUp, &gateUp}, std::pair{kDown, &down}}) {
        for (int e = 0; e < kExperts; ++e)
            EXPECT_EQ(requantized.decodeF32(name, e), original.decodeF32(name, e)) << name << e;
        // A block whose largest magnitude is 4 or 6 keeps its bytes; the others get the scale the OCP rule gives.
        const Mxfp4Tensor back = readMxfp4(again, name);
        int same = 0, blocks = 0;
        for (std::size_t b = 0; b < t->scales.size(); ++b) {
            int top = 0;
            for (int i = 0; i < 16; ++i) {
                const std::uint8_t byte = t->blocks[b * 16 + static_cast<std::size_t>(i)];
                top = std::max({top, byte & 7, (byte >> 4) & 7});
            }
            if (top < 6) continue;
            ++blocks;
            same += back.scales[b] == t->scales[b] &&
                    std::equal(back.blocks.begin() + static_cast<std::ptrdiff_t>(b * 16),
                               back.blocks.begin() + static_cast<std::ptrdiff_t>(b * 16 + 16),
                               t->blocks.begin() + static_cast<std::ptrdiff_t>(b * 16));
        }
        EXPECT_EQ(same, blocks) << name;
        EXPECT_GT(blocks, 0);
        // Block 0 (magnitudes up to 1.5): the exponent moves by floor(log2 of its largest magnitude) - 2.
        float largest = 0.0f;
        for (int i = 0; i < 16; ++i)
            largest = std::max({largest, std::fabs(e2m1(t->blocks[static_cast<std::size_t>(i)] & 0xF)),
                                std::fabs(e2m1(t->blocks[static_cast<std::size_t>(i)] >> 4))});
        ASSERT_GT(largest, 0.0f);
        EXPECT_EQ(back.scales[0], t->scales[0] + static_cast<int>(std::floor(std::log2(largest))) - 2) << name;
        EXPECT_EQ(back.scales[static_cast<std::size_t>(t->in / 32)], 0) << name;  // row 1, block 0: zeros, 2^-127
    }
}

// OCP MX for one block of 32, written from the spec: shared exponent floor(log2(amax)) - 2, each value
// x / 2^e rounded to the nearest E2M1 magnitude (ties to the even code), saturating at 6, sign kept.
std::pair<std::uint8_t, std::vector<std::uint8_t>> ocpBlock(const float* x) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    int exponent = 0;
    (void)std::frexp(amax, &exponent);  // amax = m 2^exponent, m in [0.5, 1): floor(log2) = exponent - 1
    const int e = amax > 0 ? exponent - 1 - 2 : -127;
    std::vector<std::uint8_t> codes(32);
    for (int i = 0; i < 32; ++i) {
        const float v = std::fabs(x[i]) / std::ldexp(1.0f, e);
        int best = 0;
        for (int c = 1; c < 8; ++c) {
            const float d = std::fabs(e2m1(c) - v), bestD = std::fabs(e2m1(best) - v);
            if (d < bestD || (d == bestD && c % 2 == 0)) best = c;
        }
        codes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(best | (std::signbit(x[i]) ? 8 : 0));
    }
    return {static_cast<std::uint8_t>(e + 127), codes};
}

TEST(GptOssMxfp4, Bf16ExpertsAreQuantizedAsOcpMicroscalingStatesIt) {
    TempDir tmp;
    std::mt19937 rng(43);
    std::normal_distribution<float> g(0.0f, 0.02f);
    std::vector<float> gateUp(kExperts * kHidden * 2 * kWidth), down(kExperts * kWidth * kHidden);
    for (auto& x : gateUp) x = g(rng);
    for (auto& x : down) x = g(rng);
    const fs::path source = writeBf16GptOss(tmp.path() / "bf16", kHidden, gateUp, down);
    const io::Checkpoint bf16 = io::Checkpoint::open(source);
    ASSERT_TRUE(isDenseGptOss(bf16));

    const GptOssMxfp4Report report = exportGptOssMxfp4({source, tmp.path() / "mxfp4"}, {}, {});
    const io::Checkpoint out = io::Checkpoint::open(report.written);
    EXPECT_FALSE(isDenseGptOss(out));
    EXPECT_EQ(out.find(kGateUp), nullptr);
    for (const auto& name : {kGateUp, kDown}) {
        const std::vector<float> stored = bf16.tensor(name).toF32();  // the BF16 values, [E, in, out]
        const std::int64_t in = bf16.tensor(name).shape()[1], outFeatures = bf16.tensor(name).shape()[2];
        const Mxfp4Tensor q = readMxfp4(out, name);
        ASSERT_EQ(q.out, outFeatures);
        ASSERT_EQ(q.in, in);
        double err = 0, norm = 0;
        for (int e = 0; e < kExperts; ++e)
            for (std::int64_t n = 0; n < outFeatures; ++n)
                for (std::int64_t b = 0; b < in / 32; ++b) {
                    float x[32];
                    for (int i = 0; i < 32; ++i)
                        x[i] = stored[static_cast<std::size_t>((e * in + b * 32 + i) * outFeatures + n)];
                    const auto [scale, codes] = ocpBlock(x);
                    const std::size_t row = static_cast<std::size_t>(e * outFeatures + n);
                    ASSERT_EQ(q.scales[row * static_cast<std::size_t>(in / 32) + static_cast<std::size_t>(b)], scale)
                        << name << " " << e << " " << n;
                    for (int i = 0; i < 32; ++i) {
                        ASSERT_EQ(q.value(e, n, b * 32 + i),
                                  e2m1(codes[static_cast<std::size_t>(i)]) * std::ldexp(1.0f, scale - 127))
                            << name << " " << e << " " << n << " " << b * 32 + i;
                        err += std::pow(static_cast<double>(x[i]) - q.value(e, n, b * 32 + i), 2);
                        norm += static_cast<double>(x[i]) * x[i];
                    }
                }
        const auto t =
            std::find_if(report.tensors.begin(), report.tensors.end(), [&](const auto& r) { return r.tensor == name; });
        ASSERT_NE(t, report.tensors.end());
        EXPECT_NEAR(t->relativeError, std::sqrt(err / norm), 1e-9);
        EXPECT_GT(t->relativeError, 0.05);  // 4-bit: about a tenth of the weights' norm
        EXPECT_LT(t->relativeError, 0.2);
    }
    EXPECT_LT(report.bytesAfter, report.bytesBefore);
}

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(GptOssMxfp4, RefusesWhatItCannotWriteAndLeavesNothing) {
    TempDir tmp;
    std::vector<float> gateUp(kExperts * 48 * 2 * kWidth, 0.01f), down(kExperts * kWidth * kHidden, 0.01f);
    const fs::path narrow = writeBf16GptOss(tmp.path() / "narrow", 48, gateUp, down);
    std::string e = errorOf([&] { (void)exportGptOssMxfp4({narrow, tmp.path() / "o1"}, {}, {}); });
    EXPECT_NE(e.find(kGateUp), std::string::npos) << e;
    EXPECT_NE(e.find("48 inputs"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(tmp.path() / "o1"));

    gateUp.assign(kExperts * kHidden * 2 * kWidth, 0.01f);
    gateUp[static_cast<std::size_t>(2 * kHidden * 2 * kWidth + 7)] = std::nanf("");  // expert 2
    const fs::path nan = writeBf16GptOss(tmp.path() / "nan", kHidden, gateUp, down);
    e = errorOf([&] { (void)exportGptOssMxfp4({nan, tmp.path() / "o2"}, {}, {}); });
    EXPECT_NE(e.find("expert 2"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(tmp.path() / "o2"));

    std::mt19937 rng(1);
    const Mxfp4Tensor a = randomMxfp4(2 * kWidth, kHidden, rng), b = randomMxfp4(kHidden, kWidth, rng);
    const fs::path quantized = writeMxfp4GptOss(tmp.path() / "mxfp4", a, b);
    e = errorOf([&] { (void)exportGptOssMxfp4({quantized, tmp.path() / "o3"}, {}, {}); });
    EXPECT_NE(e.find("not a gpt-oss checkpoint with BF16"), std::string::npos) << e;

    gateUp.assign(kExperts * kHidden * 2 * kWidth, 0.01f);
    const fs::path fine = writeBf16GptOss(tmp.path() / "fine", kHidden, gateUp, down);
    fs::create_directories(tmp.path() / "taken");
    e = errorOf([&] { (void)exportGptOssMxfp4({fine, tmp.path() / "taken"}, {}, {}); });
    EXPECT_NE(e.find("taken"), std::string::npos) << e;
    EXPECT_TRUE(fs::is_empty(tmp.path() / "taken"));
}

}  // namespace
}  // namespace qs::pipeline
