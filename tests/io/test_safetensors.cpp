// SafetensorsFile / parseSafetensors: valid files (including the real MLX and HF files) open, and a
// catalogue of malformed files is each rejected with its own message, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "qs/error.h"
#include "qs/io/safetensors_file.h"

#include "io_test_util.h"

using namespace qs::io;
using qs::io::test::safetensorsImage;
using testing::HasSubstr;

namespace {

std::string parseError(const std::vector<std::byte>& image) {
    try {
        parseSafetensors(image, "bad.safetensors");
    } catch (const qs::Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string parseError(const std::string& header, std::size_t dataBytes) {
    return parseError(safetensorsImage(header, dataBytes));
}

const std::string kTwo =
    R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";

}  // namespace

TEST(Safetensors, ParsesValidHeaderSortedByOffset) {
    const std::string header =
        R"({"__metadata__":{"format":"pt"},"z":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
        R"("a":{"dtype":"I64","shape":[],"data_offsets":[8,16]},"e":{"dtype":"F16","shape":[0,4],"data_offsets":[16,16]}})";
    const auto h = parseSafetensors(safetensorsImage(header, 16), "ok.safetensors");
    ASSERT_EQ(h.tensors.size(), 3u);
    EXPECT_EQ(h.tensors[0].name, "z");
    EXPECT_EQ(h.tensors[0].dtype, DType::BF16);
    EXPECT_EQ(h.tensors[0].shape, (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(h.tensors[1].name, "a");
    EXPECT_EQ(h.tensors[1].numel(), 1);  // rank-0 scalar
    EXPECT_EQ(h.tensors[2].numel(), 0);  // empty tensor
    EXPECT_EQ(h.metadata.at("format"), "pt");
    EXPECT_EQ(h.headerLength, header.size());
    EXPECT_EQ(h.dataLength(), 16u);
}

TEST(Safetensors, AcceptsJsonWhitespaceAroundHeaderAndNullMetadata) {
    const std::string header =
        " \t\n{\"__metadata__\":null,\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}\r\n   ";
    const auto h = parseSafetensors(safetensorsImage(header, 1), "ws.safetensors");
    EXPECT_EQ(h.tensors.size(), 1u);
    EXPECT_TRUE(h.metadata.empty());
}

TEST(Safetensors, AcceptsEmptyFileWithoutTensors) {
    const auto h = parseSafetensors(safetensorsImage("{}", 0), "empty.safetensors");
    EXPECT_TRUE(h.tensors.empty());
    EXPECT_EQ(h.dataLength(), 0u);
}

TEST(Safetensors, RejectsTruncatedFile) {
    const std::vector<std::byte> image(5, std::byte{1});
    EXPECT_THAT(parseError(image), HasSubstr("bad.safetensors: file is 5 bytes, too short"));
    EXPECT_THAT(parseError(std::vector<std::byte>{}), HasSubstr("file is 0 bytes"));
}

TEST(Safetensors, RejectsHeaderLengthPastEnd) {
    EXPECT_THAT(parseError(safetensorsImage("{}", 0, 50)),
                HasSubstr("header length 50 runs past the end of the file (10 bytes)"));
}

TEST(Safetensors, RejectsHeaderLengthOverLimit) {
    EXPECT_THAT(parseError(safetensorsImage("{}", 0, 100'000'001)),
                HasSubstr("header length 100000001 exceeds the limit of 100000000"));
    EXPECT_THAT(parseError(safetensorsImage("{}", 0, ~std::uint64_t{0})), HasSubstr("exceeds the limit"));
}

TEST(Safetensors, RejectsHeaderThatIsNotJson) {
    EXPECT_THAT(parseError("{\"a\": ", 0), HasSubstr("header: not valid JSON"));
    EXPECT_THAT(parseError("", 0), HasSubstr("header: not valid JSON"));
    EXPECT_THAT(parseError("{} x", 0), HasSubstr("header: not valid JSON"));
    EXPECT_THAT(parseError("{\"a\":\"\xff\xfe\"}", 0), HasSubstr("header: not valid JSON"));  // not UTF-8
    // nlohmann reports a number beyond double as out_of_range, not parse_error (found by the fuzzer)
    EXPECT_THAT(parseError(R"({"a":{"dtype":1e999}})", 0), HasSubstr("header: not valid JSON: number overflow"));
}

TEST(Safetensors, RejectsJsonThatIsNotAnObject) {
    EXPECT_THAT(parseError("[1,2]", 0), HasSubstr("header must be a JSON object, but it is an array"));
    EXPECT_THAT(parseError("42", 0), HasSubstr("header must be a JSON object, but it is an integer"));
}

TEST(Safetensors, RejectsMetadataWithNonStringValue) {
    EXPECT_THAT(parseError(R"({"__metadata__":{"format":"pt","n":3}})", 0),
                HasSubstr("__metadata__ value of 'n' must be a string, but it is an integer"));
    EXPECT_THAT(parseError(R"({"__metadata__":[1]})", 0),
                HasSubstr("__metadata__ must be an object of strings, but it is an array"));
}

TEST(Safetensors, RejectsDuplicateKeys) {
    EXPECT_THAT(
        parseError(
            R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
            1),
        HasSubstr("header: has the key 'a' twice"));
}

TEST(Safetensors, RejectsDeepNesting) {
    const std::string deep = "{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}";
    EXPECT_THAT(parseError(deep, 0), HasSubstr("nests deeper than"));
}

TEST(Safetensors, RejectsUnknownAndUnsupportedDtype) {
    EXPECT_THAT(parseError(R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", 4),
                HasSubstr("tensor 'w': unknown dtype 'F17'"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8),
                HasSubstr("tensor 'w': dtype 'C64' is valid safetensors but not supported"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,8]}})", 8),
                HasSubstr("\"dtype\" must be a string"));
}

TEST(Safetensors, RejectsMalformedEntries) {
    EXPECT_THAT(parseError(R"({"w":[1]})", 0), HasSubstr("tensor 'w': entry must be an object"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"U8","data_offsets":[0,1]}})", 1),
                HasSubstr("tensor 'w': has no \"shape\""));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1),
                HasSubstr("\"shape\" must hold non-negative integers, but holds an integer (-1)"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}})", 1),
                HasSubstr("floating-point"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1),
                HasSubstr("\"data_offsets\" must be an array of two integers"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"U8","shape":[1]}})", 1), HasSubstr("has no \"data_offsets\""));
}

TEST(Safetensors, RejectsShapeOverflow) {
    EXPECT_THAT(parseError(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}})", 1),
                HasSubstr("more elements than fit in 63 bits"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,1]}})", 1),
                HasSubstr("more bytes than fit in 64 bits"));
    EXPECT_THAT(parseError(R"({"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,1]}})", 1),
                HasSubstr("more elements than fit in 63 bits"));
}

TEST(Safetensors, RejectsOffsetsNotStartingAtZero) {
    EXPECT_THAT(parseError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                HasSubstr("tensor 'a': data_offsets [4, 8] do not start at 0"));
}

TEST(Safetensors, RejectsOverlappingOffsets) {
    EXPECT_THAT(
        parseError(
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            8),
        HasSubstr("tensor 'b': data_offsets [4, 8] overlap tensor 'a', which ends at 8"));
}

TEST(Safetensors, RejectsHoles) {
    EXPECT_THAT(
        parseError(
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
            12),
        HasSubstr("tensor 'b': data_offsets [8, 12] leave a hole of 4 bytes after tensor 'a'"));
}

TEST(Safetensors, RejectsReversedOffsets) {
    EXPECT_THAT(
        parseError(
            R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})",
            0),
        HasSubstr("tensor 'b': data_offsets [4, 0] end before they begin"));
}

TEST(Safetensors, RejectsSizeMismatch) {
    EXPECT_THAT(
        parseError(R"({"a.weight":{"dtype":"F32","shape":[3],"data_offsets":[0,10]}})", 10),
        HasSubstr("bad.safetensors: tensor 'a.weight': data_offsets [0, 10] hold 10 bytes but F32 [3] needs 12"));
}

TEST(Safetensors, RejectsOffsetsPastEnd) {
    EXPECT_THAT(
        parseError(kTwo, 10),
        HasSubstr(
            "tensor 'b': data_offsets [8, 11] run past the end of the file: the data buffer holds only 10 bytes"));
}

TEST(Safetensors, RejectsTrailingBytes) {
    EXPECT_THAT(parseError(kTwo, 15), HasSubstr("has 4 trailing bytes after the last tensor's data"));
    EXPECT_THAT(parseError("{}", 1), HasSubstr("has 1 trailing bytes"));
}

TEST(Safetensors, OpensFileZeroCopy) {
    qs::io::test::TempDir dir;
    qs::io::test::writeBytes(dir / "two.safetensors", safetensorsImage(kTwo, 11));
    const auto f = SafetensorsFile::open(dir / "two.safetensors");
    EXPECT_EQ(f.fileSize(), 8 + kTwo.size() + 11);
    ASSERT_NE(f.find("b"), nullptr);
    EXPECT_EQ(f.find("c"), nullptr);
    const auto b = f.tensor("b");
    ASSERT_EQ(b.bytes().size(), 3u);
    EXPECT_EQ(b.bytes()[0], std::byte{8});  // the data bytes are 0, 1, 2, ... from the buffer start
    EXPECT_EQ(b.toF32(), (std::vector<float>{8, 9, 10}));
    const auto a = f.tensor("a");
    float first;
    std::memcpy(&first, a.bytes().data(), 4);
    EXPECT_EQ(a.toF32()[0], first);
    EXPECT_THAT([&] { (void)f.tensor("missing"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("no tensor named 'missing'")));
}

TEST(Safetensors, OpenReportsMissingFileAndNamesIt) {
    qs::io::test::TempDir dir;
    EXPECT_THAT([&] { (void)SafetensorsFile::open(dir / "nope.safetensors"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("nope.safetensors: cannot open")));
    qs::io::test::writeBytes(dir / "empty.safetensors", {});
    EXPECT_THAT([&] { (void)SafetensorsFile::open(dir / "empty.safetensors"); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("empty.safetensors: file is 0 bytes")));
    EXPECT_THAT([&] { (void)SafetensorsFile::open(dir.path()); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("not a regular file")));
}

TEST(Safetensors, TensorViewMatrix) {
    qs::io::test::TempDir dir;
    const std::string header =
        R"({"m":{"dtype":"U8","shape":[2,3],"data_offsets":[0,6]},"r":{"dtype":"U8","shape":[2,1,1],"data_offsets":[6,8]}})";
    qs::io::test::writeBytes(dir / "m.safetensors", safetensorsImage(header, 8));
    const auto f = SafetensorsFile::open(dir / "m.safetensors");
    const qs::MatrixF m = f.tensor("m").toMatrix();
    ASSERT_EQ(m.rows(), 2);
    ASSERT_EQ(m.cols(), 3);
    EXPECT_EQ(m(1, 0), 3.0f);
    EXPECT_EQ(m(1, 2), 5.0f);
    EXPECT_THAT([&] { (void)f.tensor("r").toMatrix(); },
                testing::ThrowsMessage<qs::Error>(HasSubstr("tensor 'r' (U8 [2, 1, 1]): a matrix needs rank 1 or 2")));
}

// MLX writes "__metadata__": null and offsets out of key order.
TEST(Safetensors, OpensRealMlxAdapter) {
    const auto f =
        SafetensorsFile::open(std::string(QS_TEST_DATA_DIR) + "/io/mlx-lora-adapter-minicpm/adapters.safetensors");
    EXPECT_EQ(f.fileSize(), 1181371u);
    EXPECT_EQ(f.header().headerLength, 1715u);
    EXPECT_EQ(f.header().dataLength(), 1179648u);
    EXPECT_TRUE(f.metadata().empty());
    ASSERT_EQ(f.tensors().size(), 16u);
    const auto* a = f.find("model.layers.36.self_attn.q_proj.lora_a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->begin, 1105920u);
    EXPECT_EQ(a->end, 1179648u);
    EXPECT_EQ(a->shape, (std::vector<std::int64_t>{2304, 8}));
    float maxAbs = 0;
    for (const auto& t : f.tensors())
        for (const float v : f.view(t).toF32()) maxAbs = std::max(maxAbs, std::fabs(v));
    EXPECT_GT(maxAbs, 0.02f);
    EXPECT_LT(maxAbs, 0.0266f);
}

TEST(Safetensors, OpensRealGpt2File) {
    const auto f = SafetensorsFile::open(std::string(QS_TEST_DATA_DIR) + "/io/gpt2-capp-tiny/model.safetensors");
    EXPECT_EQ(f.header().headerLength, 4888u);
    EXPECT_EQ(f.tensors().size(), 52u);
    EXPECT_EQ(f.metadata().at("format"), "pt");
    EXPECT_EQ(f.tensor("transformer.wte.weight").shape(), (std::vector<std::int64_t>{53, 64}));
    EXPECT_EQ(f.tensor("transformer.h.0.attn.c_attn.weight").shape(), (std::vector<std::int64_t>{64, 192}));
}
