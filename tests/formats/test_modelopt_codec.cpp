// NVIDIA ModelOpt NVFP4 and FP8 exports, docs/formats/modelopt.md: hf_quant_config.json or quantization_config;
// weight_scale_2 multiplies (the reciprocal of compressed-tensors' weight_global_scale).
#include <gtest/gtest.h>

#include <random>

#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"

#include "expect_weight.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.mlp.down_proj";

struct Nvfp4Layer {
    int n = 8, k = 48;
    std::vector<std::uint8_t> codes, scaleCodes;
    float scale2 = 0.0f;
};

Nvfp4Layer makeNvfp4(unsigned seed) {
    Nvfp4Layer l;
    std::mt19937 rng(seed);
    l.codes.resize(l.n * l.k);
    l.scaleCodes.resize(l.n * l.k / 16);
    for (auto& c : l.codes) c = static_cast<std::uint8_t>(rng() % 16);
    for (auto& s : l.scaleCodes) s = e4m3Code(static_cast<float>(1 + rng() % 16) * 0.25f);
    l.scale2 = 1.75f / (6.0f * 448.0f);
    return l;
}

void addNvfp4(Fixture& f, const Nvfp4Layer& l) {
    std::vector<std::uint8_t> packed(l.codes.size() / 2);
    for (std::size_t i = 0; i < packed.size(); ++i)
        packed[i] = static_cast<std::uint8_t>(l.codes[2 * i] | (l.codes[2 * i + 1] << 4));
    f.add(kPrefix + ".weight", "U8", {l.n, l.k / 2}, packed);
    f.add(kPrefix + ".weight_scale", "F8_E4M3", {l.n, l.k / 16}, l.scaleCodes);
    f.addF32(kPrefix + ".weight_scale_2", {}, {l.scale2});
    f.addF32(kPrefix + ".input_scale", {}, {0.01f});
    f.addBF16("lm_head.weight", {2, 2}, {1, 2, 3, 4});
}

void expectNvfp4(const Nvfp4Layer& l, const DecodedLinear& d) {
    expectWeight(
        d.weight, l.n, l.k,
        [&](std::int64_t r, std::int64_t c) {
            return e2m1Value(l.codes[r * l.k + c]) * (e4m3Value(l.scaleCodes[r * (l.k / 16) + c / 16]) * l.scale2);
        },
        0.0f);
    EXPECT_EQ(d.parts.method, quant::Method::Nvfp4);
    EXPECT_EQ(d.parts.globalScale, l.scale2);
    EXPECT_EQ(d.parts.codes[1], l.codes[1]);
    expectPartsReproduceWeight(d);
}

TEST(ModelOptCodec, Nvfp4FromHfQuantConfigJson) {
    const auto l = makeNvfp4(61u);
    Fixture f("modelopt_hfq");
    addNvfp4(f, l);
    f.addJsonFile("hf_quant_config.json", {{"producer", {{"name", "modelopt"}, {"version", "0.37.0"}}},
                                           {"quantization",
                                            {{"quant_algo", "NVFP4"},
                                             {"kv_cache_quant_algo", nullptr},
                                             {"group_size", 16},
                                             {"exclude_modules", {"lm_head"}}}}});
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::ModelOpt);
    EXPECT_EQ(reader.format().variant, "NVFP4");
    expectNvfp4(l, reader.decode(kPrefix));
    ASSERT_EQ(reader.format().layers.size(), 1u);
    EXPECT_EQ(reader.format().layers[0].summary(), "nvfp4 g16 sym");
    ASSERT_EQ(reader.format().denseLinears.size(), 1u);
}

TEST(ModelOptCodec, Nvfp4FromConfigJsonQuantizationConfig) {
    const auto l = makeNvfp4(62u);
    Fixture f("modelopt_cfg");
    addNvfp4(f, l);
    nlohmann::json args = {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}};
    f.setQuantizationConfig(
        {{"config_groups", {{"group_0", {{"input_activations", args}, {"weights", args}, {"targets", {"Linear"}}}}}},
         {"ignore", {"lm_head"}},
         {"quant_algo", "NVFP4"},
         {"quant_method", "modelopt"}});
    const auto ck = f.open();
    expectNvfp4(l, LinearReader(ck).decode(kPrefix));
}

TEST(ModelOptCodec, Fp8PerTensorScaleMultiplies) {
    const int n = 8, k = 16;
    std::mt19937 rng(63);
    std::vector<std::uint8_t> codes(n * k);
    for (auto& c : codes) do
            c = static_cast<std::uint8_t>(rng() & 0xFF);
        while ((c & 0x7F) == 0x7F);
    Fixture f("modelopt_fp8");
    f.add(kPrefix + ".weight", "F8_E4M3", {n, k}, codes);
    f.addF32(kPrefix + ".weight_scale", {}, {0.02f});
    f.addF32(kPrefix + ".input_scale", {}, {0.1f});
    f.addJsonFile("hf_quant_config.json",
                  {{"producer", {{"name", "modelopt"}}}, {"quantization", {{"quant_algo", "FP8"}}}});
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().variant, "FP8");
    const auto d = reader.decode(kPrefix);
    expectWeight(
        d.weight, n, k, [&](std::int64_t r, std::int64_t c) { return e4m3Value(codes[r * k + c]) * 0.02f; }, 0.0f);
}

TEST(ModelOptCodec, MixedPrecisionNamesEachLayersAlgorithm) {
    const auto l = makeNvfp4(64u);
    Fixture f("modelopt_mixed");
    addNvfp4(f, l);
    f.addJsonFile("hf_quant_config.json",
                  {{"producer", {{"name", "modelopt"}}},
                   {"quantization",
                    {{"quant_algo", "MIXED_PRECISION"},
                     {"quantized_layers", {{kPrefix, {{"quant_algo", "NVFP4"}, {"group_size", 16}}}}}}}});
    const auto ck = f.open();
    expectNvfp4(l, LinearReader(ck).decode(kPrefix));
}

}  // namespace
}  // namespace qs::formats::test
