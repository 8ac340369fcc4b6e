// Detection on the bundled dense checkpoint, on EXL3, and the dense path of LinearReader.
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"

#include "fixture.h"

namespace qs::formats::test {
namespace {

TEST(Detect, BundledStoriesCheckpointIsDense) {
    const auto ck = io::Checkpoint::open(std::filesystem::path(QS_RESOURCES_DIR) / "models" / "stories260K");
    const auto info = detect(ck);
    EXPECT_EQ(info.format, Format::Dense);
    EXPECT_EQ(formatName(info.format), "dense");
    EXPECT_TRUE(info.decodable);
    EXPECT_TRUE(info.layers.empty());
    EXPECT_TRUE(describeLayers(ck).empty());
    // 5 layers x (q, k, v, o, gate, up, down); the tied head has no tensor of its own.
    EXPECT_EQ(info.denseLinears.size(), 35u);
    EXPECT_EQ(info.denseLinears.front(), "model.layers.0.mlp.down_proj");
    EXPECT_EQ(info.denseLinears.back(), "model.layers.4.self_attn.v_proj");
}

TEST(Detect, DenseLinearsDecodeToTheirStoredValues) {
    const auto ck = io::Checkpoint::open(std::filesystem::path(QS_RESOURCES_DIR) / "models" / "stories260K");
    const LinearReader reader(ck);
    const std::string prefix = "model.layers.3.mlp.gate_proj";
    const auto d = reader.decode(prefix);
    EXPECT_FALSE(d.quantized);
    const auto stored = ck.tensor(prefix + ".weight").toMatrix();
    ASSERT_EQ(d.weight.rows(), stored.rows());
    ASSERT_EQ(d.weight.cols(), stored.cols());
    EXPECT_TRUE(d.weight == stored);
    EXPECT_THROW((void)reader.decode("model.embed_tokens"), Error);
    EXPECT_THROW((void)reader.decode("model.layers.3.mlp.gate_proj", 0), Error);
}

TEST(Detect, LayerNumbersSortNaturally) {
    Fixture f("detect_order");
    for (const int layer : {10, 2, 1})
        f.addF32("model.layers." + std::to_string(layer) + ".mlp.up_proj.weight", {1, 2}, {1.0f, 2.0f});
    const auto ck = f.open();
    const LinearReader reader(ck);
    ASSERT_EQ(reader.linears().size(), 3u);
    EXPECT_EQ(reader.linears()[0].prefix, "model.layers.1.mlp.up_proj");
    EXPECT_EQ(reader.linears()[1].prefix, "model.layers.2.mlp.up_proj");
    EXPECT_EQ(reader.linears()[2].prefix, "model.layers.10.mlp.up_proj");
}

TEST(Detect, Exl3IsRecognisedAndDecodable) {
    Fixture f("detect_exl3");
    const std::string p = "model.layers.0.self_attn.q_proj";
    f.add(p + ".trellis", "I16", {8, 8, 64}, std::vector<std::uint8_t>(8 * 8 * 64 * 2, 0));
    f.addF16(p + ".suh", {128}, std::vector<float>(128, 1.0f));
    f.addF16(p + ".svh", {128}, std::vector<float>(128, 1.0f));
    f.setQuantizationConfig({{"quant_method", "exl3"}, {"version", "0.0.5"}, {"bits", 4.0}, {"head_bits", 6}});
    const auto ck = f.open();
    const auto info = detect(ck);
    EXPECT_EQ(info.format, Format::Exl3);
    EXPECT_TRUE(info.decodable) << info.whyNot;
    ASSERT_EQ(info.layers.size(), 1u);
    EXPECT_EQ(info.layers[0].codec, "exl3");
    EXPECT_EQ(info.layers[0].bits, 4);
    // All-zero symbols: every state is 0, so W_hat is the 3inst value of state 0 everywhere; H W_hat H
    // with unit signs concentrates it in element (0, 0) of each 128 x 128 block: 128 * 0.76806640625.
    const MatrixF w = LinearReader(ck).decodeF32(p);
    EXPECT_FLOAT_EQ(w(0, 0), 128.0f * 0.76806640625f);
    EXPECT_FLOAT_EQ(w(1, 0), 0.0f);
}

}  // namespace
}  // namespace qs::formats::test
