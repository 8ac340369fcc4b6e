// The GGUF container: the reader on a file llama.cpp's tools wrote (tests/data/gguf), on images built
// byte by byte here (every metadata type, nested arrays, alignment) and on broken ones (each one
// qs::Error naming the file and what is wrong); the writer's files read back, and the name table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_names.h"
#include "qs/io/gguf_writer.h"
#include "qs/io/llama_ftype.h"
#include "qs/io/safetensors_file.h"

#include "gguf_test_bytes.h"
#include "io_test_util.h"

using namespace qs::io;
using qs::io::test::GgufBytes;
using qs::io::test::TempDir;
using qs::io::test::writeBytes;
using testing::AllOf;
using testing::HasSubstr;

namespace {

const std::filesystem::path& kTinyLlama = qs::io::test::kTinyLlamaGguf;

std::string parseError(const std::vector<std::byte>& bytes) {
    try {
        (void)parseGguf(bytes, "bad.gguf");
    } catch (const qs::Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::vector<std::byte> fileBytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

// A valid file: two metadata keys, one F32 tensor [2, 3] (dims 3, 2), data aligned to 32. The file
// ends with the tensor: like llama.cpp's loader, the reader needs no padding after the last one.
GgufBytes smallValid() {
    GgufBytes b;
    b.header(1, 2).kvString("general.architecture", "llama").kvU32("llama.block_count", 1);
    b.tensor("w", {3, 2}, 0, 0).padTo(32);
    for (int i = 0; i < 6; ++i) b.put(static_cast<float>(i) + 0.5f);
    return b;
}

}  // namespace

// ---- A file written by llama.cpp's tools ----

TEST(GgufReader, ReadsTheTinyLlamaFileAsItsSourceNoteDescribesIt) {
    const GgufFile file = GgufFile::open(kTinyLlama);
    const GgufHeader& h = file.header();
    EXPECT_EQ(h.version, 3u);
    EXPECT_EQ(h.alignment, 32u);
    EXPECT_EQ(h.metadata.size(), 18u);
    EXPECT_EQ(h.dataOffset, 724416u);
    ASSERT_EQ(h.tensors.size(), 12u);
    const auto& m = file.metadata();
    EXPECT_EQ(*m.string("general.architecture"), "llama");
    EXPECT_EQ(m.integer("llama.embedding_length"), 8);
    EXPECT_EQ(m.integer("llama.block_count"), 1);
    EXPECT_EQ(m.integer("llama.feed_forward_length"), 32);
    EXPECT_EQ(m.integer("llama.attention.head_count"), 2);
    EXPECT_EQ(m.integer("llama.attention.head_count_kv"), 2);
    EXPECT_EQ(m.integer("llama.rope.dimension_count"), 4);
    EXPECT_FLOAT_EQ(static_cast<float>(*m.number("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
    EXPECT_EQ(m.integer("general.file_type"), 1);
    EXPECT_EQ(*m.string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(m.array("tokenizer.ggml.tokens")->items.size(), 32000u);
    EXPECT_EQ(m.array("tokenizer.ggml.scores")->elementType, GgufValueType::F32);
    EXPECT_EQ(m.integer("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(m.integer("tokenizer.ggml.eos_token_id"), 2);
    EXPECT_EQ(m.integer("tokenizer.ggml.unknown_token_id"), 0);

    const TensorInfo* embed = file.find("token_embd.weight");
    ASSERT_NE(embed, nullptr);
    EXPECT_EQ(embed->shape, (std::vector<std::int64_t>{32000, 8}));  // GGUF's [8, 32000], innermost first
    EXPECT_EQ(embed->ggmlType, GgmlType::F16);
    EXPECT_EQ(embed->dtype, DType::F16);
    EXPECT_EQ(file.find("output_norm.weight")->ggmlType, GgmlType::F32);
    std::uint64_t lastEnd = 0;
    for (const auto& t : h.tensors) lastEnd = std::max(lastEnd, t.end);
    EXPECT_EQ(h.dataOffset + lastEnd, file.fileSize());  // the last tensor ends the file
}

TEST(GgufReader, TensorViewsDecodeTheBytesAtTheirOffsets) {
    const GgufFile file = GgufFile::open(kTinyLlama);
    const std::vector<std::byte> raw = fileBytes(kTinyLlama);
    for (const auto& info : file.tensors()) {
        const std::vector<float> values = file.view(info).toF32();
        ASSERT_EQ(values.size(), static_cast<std::size_t>(info.numel())) << info.name;
        const std::byte* at = raw.data() + file.header().dataOffset + info.begin;
        std::vector<float> expected(values.size());
        convertToF32(info.dtype, at, expected.size(), expected.data());  // F16 or F32: plain numbers in the file
        EXPECT_EQ(values, expected) << info.name;
    }
}

TEST(GgufReader, OpeningReadsTheHeaderOnly) {
    // A file whose data section is never touched: bytes past the header are unreadable garbage that
    // would fail any check of the values; opening still succeeds and the sizes are right.
    TempDir dir;
    GgufBytes b;
    b.header(1, 0).tensor("big", {256, 1024}, 0, 0).padTo(32).fill(256 * 1024 * 4, 0xFF);
    writeBytes(dir / "big.gguf", b.bytes());
    const GgufFile file = GgufFile::open(dir / "big.gguf");
    EXPECT_EQ(file.tensors().front().byteSize(), 256u * 1024 * 4);
}

// ---- Images built here ----

TEST(GgufReader, ReadsEveryMetadataTypeAndNestedArrays) {
    GgufBytes b;
    b.header(0, 14);
    b.str("u8").u32(0).put<std::uint8_t>(200);
    b.str("i8").u32(1).put<std::int8_t>(-100);
    b.str("u16").u32(2).put<std::uint16_t>(60000);
    b.str("i16").u32(3).put<std::int16_t>(-30000);
    b.str("u32").u32(4).u32(4000000000u);
    b.str("i32").u32(5).put<std::int32_t>(-2000000000);
    b.str("f32").u32(6).put(1.5f);
    b.str("bool").u32(7).put<std::uint8_t>(1);
    b.str("string").u32(8).str("h\xC3\xA9llo");
    b.str("u64").u32(10).u64(18000000000000000000ull);
    b.str("i64").u32(11).i64(-9000000000000000000ll);
    b.str("f64").u32(12).put(-2.25);
    b.str("strings").u32(9).u32(8).u64(2).str("a").str("");
    b.str("nested").u32(9).u32(9).u64(2);  // an array of two arrays
    b.u32(5).u64(2).put<std::int32_t>(-1).put<std::int32_t>(7);
    b.u32(8).u64(1).str("x");
    const GgufHeader h = parseGguf(b.bytes(), "types.gguf");
    const auto& m = h.metadata;
    EXPECT_EQ(m.integer("u8"), 200);
    EXPECT_EQ(m.integer("i8"), -100);
    EXPECT_EQ(m.integer("u16"), 60000);
    EXPECT_EQ(m.integer("i16"), -30000);
    EXPECT_EQ(m.integer("u32"), 4000000000);
    EXPECT_EQ(m.integer("i32"), -2000000000);
    EXPECT_EQ(m.number("f32"), 1.5);
    EXPECT_EQ(m.boolean("bool"), true);
    EXPECT_EQ(*m.string("string"), "h\xC3\xA9llo");
    EXPECT_EQ(m.find("u64")->asUnsigned(), 18000000000000000000ull);
    EXPECT_EQ(m.integer("u64"), std::nullopt);  // does not fit an int64
    EXPECT_EQ(m.integer("i64"), -9000000000000000000ll);
    EXPECT_EQ(m.number("f64"), -2.25);
    EXPECT_EQ(m.find("f64")->type(), GgufValueType::F64);
    const GgufArray* strings = m.array("strings");
    ASSERT_NE(strings, nullptr);
    EXPECT_EQ(*strings->items[1].asString(), "");
    const GgufArray* nested = m.array("nested");
    ASSERT_EQ(nested->items.size(), 2u);
    EXPECT_EQ(nested->elementType, GgufValueType::Array);
    EXPECT_EQ(nested->items[0].asArray()->items[1].asInteger(), 7);
    EXPECT_EQ(*nested->items[1].asArray()->items[0].asString(), "x");
    EXPECT_EQ(m.entries()[0].first, "u8");  // file order is kept
    EXPECT_TRUE(h.tensors.empty());
}

TEST(GgufReader, ReadsVersionTwoAndACustomAlignment) {
    GgufBytes b;
    b.header(2, 1, 2).kvU32("general.alignment", 64);
    b.tensor("a", {4}, 0, 0).tensor("b", {32}, 8, 64).padTo(64);  // F32 [4], Q8_0 [32] at 64
    b.put(1.0f).put(2.0f).put(3.0f).put(4.0f).padTo(64);
    b.put<std::uint16_t>(0x3C00);  // Q8_0 block: d = 1.0 (f16), then 32 int8 codes
    for (int i = 0; i < 32; ++i) b.put<std::int8_t>(static_cast<std::int8_t>(i - 16));
    const GgufHeader h = parseGguf(b.bytes(), "v2.gguf");
    EXPECT_EQ(h.version, 2u);
    EXPECT_EQ(h.alignment, 64u);
    EXPECT_EQ(h.dataOffset % 64, 0u);
    EXPECT_EQ(h.tensors[1].ggmlType, GgmlType::Q8_0);
    EXPECT_EQ(h.tensors[1].dtype, DType::U8);
    EXPECT_EQ(h.tensors[1].byteSize(), 34u);
    const std::span<const std::byte> data = std::span(b.bytes()).subspan(h.dataOffset);
    const TensorView q(h.tensors[1], data.subspan(h.tensors[1].begin, h.tensors[1].byteSize()));
    const std::vector<float> values = q.toF32();
    for (int i = 0; i < 32; ++i) EXPECT_EQ(values[static_cast<std::size_t>(i)], static_cast<float>(i - 16));
    EXPECT_EQ(q.info().typeName(), "q8_0");
    EXPECT_EQ(q.info().storedSize(), 34u);
}

// ---- Broken images: one qs::Error each, naming the file and the fault ----

TEST(GgufReader, EveryTruncationOfAValidFileIsAnError) {
    const GgufBytes valid = smallValid();
    ASSERT_EQ(parseError(valid.bytes()), "(no error)");
    for (std::size_t n = 0; n < valid.size(); ++n) {
        const std::vector<std::byte> cut(valid.bytes().begin(), valid.bytes().begin() + static_cast<std::ptrdiff_t>(n));
        const std::string error = parseError(cut);
        EXPECT_THAT(error, HasSubstr("bad.gguf: ")) << "prefix of " << n << " bytes";
        EXPECT_EQ(error.find('\n'), std::string::npos);
    }
}

TEST(GgufReader, NamesWhatIsWrong) {
    const auto expectError = [](const GgufBytes& b, const std::string& what) {
        EXPECT_THAT(parseError(b.bytes()), AllOf(HasSubstr("bad.gguf: "), HasSubstr(what)));
    };
    expectError(GgufBytes().raw("GGUX").u32(3).u64(0).u64(0), "does not begin with the magic 'GGUF'");
    expectError(GgufBytes().header(0, 0, 1), "version 1 is not supported");
    expectError(GgufBytes().header(0, 0, 4), "version 4 is not supported");
    expectError(GgufBytes().header(0, 0, 0x03000000), "byte-swapped");
    expectError(GgufBytes().header(1ull << 60, 0), "the tensor count is 1152921504606846976");
    expectError(GgufBytes().header(0, 1ull << 40), "the metadata count is 1099511627776");
    expectError(GgufBytes().header(0, 1).u64(1ull << 50).fill(8), "metadata key 0 claims 1125899906842624 bytes");
    expectError(GgufBytes().header(0, 1).str("k").u32(8).u64(1ull << 40),
                "metadata key 'k' claims 1099511627776 bytes");
    expectError(GgufBytes().header(0, 1).str("k").u32(13).u32(0), "metadata key 'k' has unknown value type 13");
    expectError(GgufBytes().header(0, 1).str("k").u32(9).u32(4).u64(1ull << 61),
                "element count is 2305843009213693952");
    expectError(GgufBytes().header(0, 1).str("k").u32(9).u32(42).u64(0), "unknown array element type 42");
    expectError(GgufBytes().header(0, 2).kvU32("k", 1).kvU32("k", 2), "metadata key 'k' appears twice");
    expectError(GgufBytes().header(0, 1).str("").u32(4).u32(0), "metadata key 0 is empty");
    expectError(GgufBytes().header(0, 1).kvString("general.alignment", "32"), "general.alignment must be a u32");
    expectError(GgufBytes().header(0, 1).kvU32("general.alignment", 48), "general.alignment 48 is not a power of two");
    GgufBytes deep;
    deep.header(0, 1).str("deep").u32(9);
    for (int i = 0; i < 9; ++i) deep.u32(9).u64(1);
    deep.u32(4).u64(0);
    expectError(deep, "arrays nest deeper than 8 levels");

    expectError(GgufBytes().header(1, 0).tensor("t", {2}, 99, 0).padTo(32).fill(32),
                "tensor 't' has unknown ggml type 99");
    expectError(GgufBytes().header(1, 0).tensor("t", {2}, 4, 0).padTo(32).fill(32),
                "tensor 't' has unknown ggml type 4");  // removed Q4_2
    expectError(GgufBytes().header(1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0), "5 dimensions; GGUF allows at most 4");
    expectError(GgufBytes().header(1, 0).tensor("t", {-3}, 0, 0), "negative dimension -3");
    expectError(GgufBytes().header(1, 0).tensor("t", {1ll << 40, 1ll << 40}, 0, 0), "product does not fit in 63 bits");
    // Found by the fuzzer: a zero dimension hid the overflow of the others, which the row-major
    // element count (the dimensions in the other order) then hit.
    expectError(GgufBytes().header(1, 0).tensor("t", {0, 1ll << 40, 1ll << 40}, 0, 0),
                "product does not fit in 63 bits");
    expectError(GgufBytes().header(1, 0).tensor("t", {1ll << 40, 1ll << 22}, 0, 0),
                "needs more bytes than fit in 64 bits");
    expectError(GgufBytes().header(1, 0).tensor("t", {48}, 8, 0).padTo(32).fill(64),
                "rows of 48 elements, not a multiple of the type's block of 32");
    expectError(GgufBytes().header(1, 0).tensor("t", {2}, 0, 8).padTo(32).fill(64),
                "data offset 8 is not a multiple of the alignment 32");
    expectError(GgufBytes().header(1, 0).tensor("t", {16}, 0, 0).padTo(32).fill(32), "runs past the end of the file");
    expectError(GgufBytes().header(1, 0).tensor("t", {2}, 0, 1ull << 62).padTo(32).fill(32),
                "runs past the end of the file");
    expectError(GgufBytes().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).padTo(32).fill(64),
                "tensor 'b': data [32, 48) overlaps tensor 'a', which ends at 64");
    expectError(GgufBytes().header(2, 0).tensor("a", {4}, 0, 0).tensor("a", {4}, 0, 32).padTo(32).fill(64),
                "tensor 'a' appears twice");
    expectError(GgufBytes().header(1, 0).tensor("", {4}, 0, 0), "tensor info 0 has an empty name");
    expectError(GgufBytes().header(1, 0).tensor(std::string(64, 'n'), {4}, 0, 0),
                "claims 64 bytes, more than the 63 allowed");
    expectError(GgufBytes().header(1, 0).tensor("t", {4}, 0, 0),
                "truncated: the tensor data section should start at offset 64");
}

TEST(GgufReader, OpenNamesTheFile) {
    TempDir dir;
    GgufBytes b = smallValid();
    std::vector<std::byte> bytes = b.bytes();
    bytes.resize(40);
    writeBytes(dir / "cut.gguf", bytes);
    EXPECT_THAT(
        [&] { (void)GgufFile::open(dir / "cut.gguf"); },
        testing::ThrowsMessage<qs::Error>(HasSubstr((dir / "cut.gguf").string() + ": the metadata count is 2")));
    EXPECT_THAT([&] { (void)GgufFile::open(dir / "missing.gguf"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("missing.gguf")));
}

TEST(GgufReader, RandomBytesNeverCrash) {
    // Mutations of a valid file: every outcome is either a parsed header or one qs::Error.
    const GgufBytes valid = smallValid();
    std::mt19937 rng(7);
    int parsed = 0, refused = 0;
    for (int round = 0; round < 3000; ++round) {
        std::vector<std::byte> bytes = valid.bytes();
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<std::byte>(rng() & 0xFF);
        try {
            (void)parseGguf(bytes, "m.gguf");
            ++parsed;
        } catch (const qs::Error&) {
            ++refused;
        }
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(parsed, 0);  // flips inside the tensor data leave a valid file
}

TEST(SafetensorsFile, AGgufFileIsNamedAsGguf) {
    const std::string error = [] {
        try {
            (void)SafetensorsFile::open(kTinyLlama);
        } catch (const qs::Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    }();
    EXPECT_THAT(error, AllOf(HasSubstr("llama-2-tiny-random.gguf"), HasSubstr("is a GGUF file"),
                             testing::Not(HasSubstr("header length"))));
}

// ---- The writer ----

TEST(GgufWriter, WritesWhatTheReaderReadsBackAligned) {
    TempDir dir;
    const auto path = dir / "out.gguf";
    GgufWriter w(path);
    w.set("general.architecture", GgufValue::string("llama"));
    w.set("u64", GgufValue::unsignedInteger(GgufValueType::U64, 18000000000000000000ull));
    w.set("i8", GgufValue::signedInteger(GgufValueType::I8, -5));
    w.set("f64", GgufValue::floating(GgufValueType::F64, 0.1));
    w.set("flag", GgufValue::boolean(true));
    w.set("scores", GgufValue::f32s({0.5f, -1.0f}));
    GgufArray nested{GgufValueType::Array, {GgufValue::i32s({1, 2}), GgufValue::strings({"a"})}};
    w.set("nested", GgufValue::array(nested));
    w.set("general.architecture", GgufValue::string("qwen3"));  // replaced in place, not appended
    const std::vector<float> a = {1, 2, 3, 4, 5, 6};
    w.addTensor("a", GgmlType::F32, {2, 3}, std::as_bytes(std::span(a)));
    std::vector<std::uint16_t> h(40);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = f32ToF16(static_cast<float>(i));
    w.addTensor("h", GgmlType::F16, {40}, std::as_bytes(std::span(h)));
    std::vector<std::byte> q(2 * 34, std::byte{1});
    w.addTensor("q", GgmlType::Q8_0, {2, 32}, q);
    EXPECT_EQ(w.finish(), std::filesystem::absolute(path));

    const GgufFile file = GgufFile::open(path);
    const auto& m = file.metadata();
    EXPECT_EQ(m.entries().front().first, "general.architecture");
    EXPECT_EQ(*m.string("general.architecture"), "qwen3");
    EXPECT_EQ(m.find("u64")->asUnsigned(), 18000000000000000000ull);
    EXPECT_EQ(m.find("i8")->type(), GgufValueType::I8);
    EXPECT_EQ(m.integer("i8"), -5);
    EXPECT_EQ(m.number("f64"), 0.1);
    EXPECT_EQ(m.boolean("flag"), true);
    EXPECT_EQ(m.array("scores")->items[1].asNumber(), -1.0);
    EXPECT_EQ(*m.array("nested")->items[1].asArray()->items[0].asString(), "a");
    EXPECT_FALSE(m.contains("general.alignment"));  // the default is not written
    ASSERT_EQ(file.tensors().size(), 3u);
    EXPECT_EQ(file.tensor("a").toF32(), a);
    EXPECT_EQ(file.tensor("a").shape(), (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(file.tensor("h").toF32()[39], 39.0f);
    EXPECT_EQ(file.find("h")->begin, 32u);                            // 24 bytes of "a", padded to 32
    EXPECT_EQ(file.find("q")->begin, 128u);                           // 80 bytes of "h", padded to 128
    EXPECT_EQ(file.fileSize(), file.header().dataOffset + 128 + 96);  // the last tensor is padded too
    EXPECT_EQ(file.header().dataOffset % 32, 0u);
}

TEST(GgufWriter, HonoursAnAlignmentAndLeavesNothingBehindOnError) {
    TempDir dir;
    {
        GgufWriter w(dir / "a64.gguf", {.alignment = 64});
        const std::vector<float> v(3, 1.0f);
        w.addTensor("x", GgmlType::F32, {3}, std::as_bytes(std::span(v)));
        w.addTensor("y", GgmlType::F32, {3}, std::as_bytes(std::span(v)));
        w.finish();
    }
    const GgufFile file = GgufFile::open(dir / "a64.gguf");
    EXPECT_EQ(file.header().alignment, 64u);
    EXPECT_EQ(file.metadata().integer("general.alignment"), 64);
    EXPECT_EQ(file.find("y")->begin, 64u);
    {
        GgufWriter w(dir / "bad.gguf");
        const std::vector<float> v(3, 1.0f);
        EXPECT_THAT([&] { w.addTensor("q", GgmlType::Q8_0, {3}, std::as_bytes(std::span(v))); },
                    testing::ThrowsMessage<qs::Error>(HasSubstr("q8_0 stores rows in blocks of 32")));
        EXPECT_THROW(w.finish(), qs::Error);  // spent after a failure
    }
    {
        GgufWriter w(dir / "dropped.gguf");
        w.set("k", GgufValue::u32(1));
    }  // destroyed unfinished
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"a64.gguf"});
    EXPECT_THROW(GgufWriter(dir / "a64.gguf"), qs::Error);  // exists, no overwrite
    EXPECT_THROW(GgufWriter(dir / "no-such-folder" / "x.gguf"), qs::Error);
    GgufWriter names(dir / "n.gguf");
    const std::vector<float> v(1, 0.0f);
    EXPECT_THAT([&] { names.addTensor(std::string(64, 'x'), GgmlType::F32, {1}, std::as_bytes(std::span(v))); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("must be 1 to 63 bytes long")));
}

// ---- llama.cpp's names ----

TEST(GgufNames, MapsLlamaCppNamesToHuggingFaceAndBack) {
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"},
        {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
        {"blk.12.attn_q.weight", "model.layers.12.self_attn.q_proj.weight"},
        {"blk.12.attn_q.bias", "model.layers.12.self_attn.q_proj.bias"},
        {"blk.3.attn_k.weight", "model.layers.3.self_attn.k_proj.weight"},
        {"blk.3.attn_v.weight", "model.layers.3.self_attn.v_proj.weight"},
        {"blk.3.attn_output.weight", "model.layers.3.self_attn.o_proj.weight"},
        {"blk.3.attn_q_norm.weight", "model.layers.3.self_attn.q_norm.weight"},
        {"blk.3.attn_k_norm.weight", "model.layers.3.self_attn.k_norm.weight"},
        {"blk.3.ffn_norm.weight", "model.layers.3.post_attention_layernorm.weight"},
        {"blk.3.ffn_gate.weight", "model.layers.3.mlp.gate_proj.weight"},
        {"blk.3.ffn_up.weight", "model.layers.3.mlp.up_proj.weight"},
        {"blk.3.ffn_down.weight", "model.layers.3.mlp.down_proj.weight"},
    };
    for (const auto& [gguf, hf] : pairs) {
        EXPECT_EQ(hfNameOfGgufTensor(gguf), hf);
        EXPECT_EQ(ggufNameOfHfTensor(hf), gguf);
    }
    for (const char* unknown :
         {"rope_freqs.weight", "blk.x.attn_q.weight", "blk.1.attn_q.scale", "blk.1.ffn_gate_exps.weight", "output"})
        EXPECT_EQ(hfNameOfGgufTensor(unknown), std::nullopt) << unknown;
    EXPECT_EQ(ggufNameOfHfTensor("model.layers.0.self_attn.rotary_emb.inv_freq"), std::nullopt);
    EXPECT_EQ(ggufArchitectureOfModelType("mistral"), "llama");
    EXPECT_EQ(hfArchitectureOfGguf("qwen3")->architecture, "Qwen3ForCausalLM");
    EXPECT_EQ(llamaFtypeName(15), "Q4_K_M");
    EXPECT_EQ(llamaFtypeName(5), "type 5");
}
