// GGUF through formats: detect names it "gguf" with each linear's ggml type, and LinearReader decodes
// a linear of every type whose traits say it decodes exactly as ggmlDecodeRow decodes its stored rows
// (so the types the ggml-types work adds are covered as they land); a type without a decoder is
// refused with one line naming the tensor and the type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/gguf_writer.h"
#include "qs/quant/ggml_encode.h"

namespace qs::formats::test {
namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;

const fs::path kTinyLlama = fs::path(QS_TEST_DATA_DIR) / "gguf" / "llama-2-tiny-random.gguf";

class TempGguf {
public:
    explicit TempGguf(const std::string& name)
        : path_(fs::temp_directory_path() / ("qs_formats_" + name + "_" + std::to_string(::getpid()) + ".gguf")) {
        fs::remove(path_);
    }
    ~TempGguf() { fs::remove(path_); }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

constexpr std::int64_t kRows = 3, kCols = 256;  // 256: whole blocks of every ggml type

// Random bytes for a [kRows, kCols] tensor of `type`: any bit pattern is a valid block to decode.
std::vector<std::byte> randomRows(io::GgmlType type, unsigned seed) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(kRows) * io::ggmlRowBytes(type, kCols));
    std::mt19937 rng(seed);
    for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
    return bytes;
}

// A qwen3 GGUF (no q/k reordering) whose up_proj is stored as `type` with the given bytes.
void writeModel(const fs::path& path, io::GgmlType type, const std::vector<std::byte>& upBytes) {
    io::GgufWriter w(path);
    w.set("general.architecture", io::GgufValue::string("qwen3"));
    w.set("general.file_type", io::GgufValue::u32(7));
    const std::vector<float> norm(kCols, 1.0f);
    w.addTensor("blk.0.ffn_norm.weight", io::GgmlType::F32, {kCols}, std::as_bytes(std::span(norm)));
    w.addTensor("blk.0.ffn_up.weight", type, {kRows, kCols}, upBytes);
    const std::vector<float> down(static_cast<std::size_t>(kRows * kCols), 0.25f);
    w.addTensor("blk.0.ffn_down.weight", io::GgmlType::F32, {kCols, kRows}, std::as_bytes(std::span(down)));
    w.finish();
}

std::vector<io::GgmlType> typesWhere(bool decodes) {
    std::vector<io::GgmlType> types;
    for (std::uint32_t n = 0; n < 64; ++n)
        if (const auto* t = io::ggmlTypeTraits(n); t != nullptr && t->decodes == decodes) types.push_back(t->type);
    return types;
}

TEST(GgufFormat, TheTinyLlamaFileIsGgufWithDenseLinears) {
    const auto ck = io::Checkpoint::open(kTinyLlama);
    const FormatInfo info = detect(ck);
    EXPECT_EQ(info.format, Format::Gguf);
    EXPECT_EQ(formatName(info.format), "gguf");
    EXPECT_EQ(info.variant, "F16");
    EXPECT_TRUE(info.decodable);
    ASSERT_EQ(info.layers.size(), 8u);  // 7 linears and the untied lm_head ("output.weight")
    for (const auto& l : info.layers) {
        EXPECT_EQ(l.codec, "gguf");
        EXPECT_EQ(l.summary(), "dense 16-bit") << l.ref.prefix;
    }
    const LinearReader reader(ck);
    const DecodedLinear q = reader.decode("model.layers.0.self_attn.q_proj");
    EXPECT_FALSE(q.quantized);
    EXPECT_TRUE(q.weight == ck.tensor("model.layers.0.self_attn.q_proj.weight").toMatrix());
}

TEST(GgufFormat, Q8LinearsAreDescribedByTheirGgmlType) {
    TempGguf file("q8");
    std::vector<float> values(static_cast<std::size_t>(kRows * kCols));
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    for (auto& v : values) v = normal(rng);
    std::vector<std::byte> bytes(static_cast<std::size_t>(kRows) * io::ggmlRowBytes(io::GgmlType::Q8_0, kCols));
    for (std::int64_t r = 0; r < kRows; ++r)
        quant::ggmlEncodeRow(io::GgmlType::Q8_0, values.data() + r * kCols,
                             reinterpret_cast<std::uint8_t*>(bytes.data()) +
                                 static_cast<std::size_t>(r) * io::ggmlRowBytes(io::GgmlType::Q8_0, kCols),
                             kCols);
    writeModel(file.path(), io::GgmlType::Q8_0, bytes);
    const auto ck = io::Checkpoint::open(file.path());
    const FormatInfo info = detect(ck);
    EXPECT_EQ(info.variant, "Q8_0");
    EXPECT_EQ(info.config["quant_method"], "gguf");
    ASSERT_EQ(info.layers.size(), 2u);
    const LayerQuantInfo& up = info.layers[1];
    EXPECT_EQ(up.ref.prefix, "model.layers.0.mlp.up_proj");
    EXPECT_EQ(up.scheme, "q8_0");
    EXPECT_EQ(up.bits, 8);
    EXPECT_EQ(up.groupSize, 32);
    EXPECT_EQ(up.rows, kRows);
    EXPECT_EQ(up.cols, kCols);
    EXPECT_EQ(up.summary(), "gguf q8_0");
    EXPECT_EQ(info.layers[0].summary(), "dense 32-bit");
    const DecodedLinear d = LinearReader(ck).decode("model.layers.0.mlp.up_proj");
    EXPECT_TRUE(d.quantized);
    EXPECT_FALSE(d.partsExact);
    for (std::int64_t r = 0; r < kRows; ++r)
        for (std::int64_t c = 0; c < kCols; ++c)
            EXPECT_NEAR(d.weight(r, c), values[static_cast<std::size_t>(r * kCols + c)], 0.02f);
}

TEST(GgufFormat, EveryTypeThatDecodesDecodesItsStoredRowsAsGgml) {
    const auto types = typesWhere(true);
    ASSERT_GE(types.size(), 4u);  // f32, f16, bf16, q8_0 at least
    for (const io::GgmlType type : types) {
        const std::string name(io::ggmlTypeTraits(type).name);
        TempGguf file("decodes_" + name);
        const std::vector<std::byte> bytes = randomRows(type, static_cast<unsigned>(type) + 1);
        writeModel(file.path(), type, bytes);
        const auto ck = io::Checkpoint::open(file.path());
        // Random blocks hold NaN and Inf scales: decoded as they are, not refused (issue 21's default).
        const MatrixF w =
            LinearReader(ck, DecodeOptions{.allowNonFinite = true}).decodeF32("model.layers.0.mlp.up_proj");
        std::vector<float> expected(static_cast<std::size_t>(kCols));
        const std::size_t rowBytes = io::ggmlRowBytes(type, kCols);
        for (std::int64_t r = 0; r < kRows; ++r) {
            io::ggmlDecodeRow(
                type, reinterpret_cast<const std::uint8_t*>(bytes.data()) + static_cast<std::size_t>(r) * rowBytes,
                expected.data(), kCols);
            // Bit for bit: random blocks hold NaN and Inf scales, which == would not match.
            EXPECT_EQ(std::memcmp(w.row(r).data(), expected.data(), expected.size() * sizeof(float)), 0)
                << name << " row " << r;
        }
    }
}

TEST(GgufFormat, ATypeWithoutADecoderIsRefusedNamingTensorAndType) {
    const auto types = typesWhere(false);
    ASSERT_FALSE(types.empty());  // the integer types never decode to weights
    const io::GgmlType type = types.front();
    const std::string name(io::ggmlTypeTraits(type).name);
    TempGguf file("refused");
    writeModel(file.path(), type, randomRows(type, 9));
    const auto ck = io::Checkpoint::open(file.path());
    const FormatInfo info = detect(ck);  // inspecting still works
    EXPECT_EQ(info.layers[1].problem, "ggml type " + name + " cannot be decoded by QuantScope");
    try {
        (void)LinearReader(ck).decode("model.layers.0.mlp.up_proj");
        ADD_FAILURE() << "decoding " << name << " did not throw";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_THAT(
            what, HasSubstr(file.path().string() + ": tensor 'model.layers.0.mlp.up_proj.weight': ggml type " + name));
        EXPECT_EQ(what.find('\n'), std::string::npos);
    }
}

}  // namespace
}  // namespace qs::formats::test
