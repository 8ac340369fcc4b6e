// Files a hostile checkpoint folder may hold where JSON or safetensors is expected: FIFOs and
// devices (which blocked forever), JSON nested 100,000 deep (which overflowed the stack), files
// larger than any real config (read until memory ran out), and the one integer accessor that
// range-checks what JSON says (4294967300 was read as 4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include <sys/stat.h>
#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/json_file.h"
#include "qs/io/json_value.h"
#include "qs/io/regular_file.h"

#include "io_test_util.h"

using namespace qs::io;
using qs::io::test::safetensorsImage;
using qs::io::test::TempDir;
using qs::io::test::writeBytes;
using qs::io::test::writeText;
using testing::HasSubstr;

namespace {

const std::string kHeader = R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";

template <typename F>
std::string errorOf(F&& f) {
    try {
        f();
    } catch (const qs::Error& e) {
        return e.what();
    }
    return "(no error)";
}

// Runs `f` on another thread and fails (instead of hanging the suite) when it does not return in time.
template <typename F>
std::string errorWithin(F&& f, std::chrono::seconds limit = std::chrono::seconds(20)) {
    auto result = std::async(std::launch::async, [&] { return errorOf(f); });
    if (result.wait_for(limit) != std::future_status::ready) {
        ADD_FAILURE() << "did not return within " << limit.count() << " s";
        std::_Exit(1);  // the blocked thread cannot be joined
    }
    return result.get();
}

std::string nested(int depth, char open, char close) { return std::string(depth, open) + std::string(depth, close); }

}  // namespace

TEST(HostileFiles, FifoConfigIsRefusedWithoutBlocking) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kHeader, 16));
    ASSERT_EQ(::mkfifo((dir / "config.json").c_str(), 0600), 0);
    const auto error = errorWithin([&] { (void)Checkpoint::open(dir.path()); });
    EXPECT_THAT(error, HasSubstr("config.json: is a named pipe, not a regular file"));
}

TEST(HostileFiles, FifoShardIsRefusedWithoutBlocking) {
    TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "model.safetensors").c_str(), 0600), 0);
    const auto error = errorWithin([&] { (void)Checkpoint::open(dir.path()); });
    EXPECT_THAT(error, HasSubstr("model.safetensors: is a named pipe, not a regular file"));
}

TEST(HostileFiles, FifoNamedAsACheckpointFileIsRefusedWithoutBlocking) {
    // Checkpoint::open peeks at a file's magic to tell GGUF from safetensors: the peek must not
    // wait on a pipe either.
    TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "model.gguf").c_str(), 0600), 0);
    EXPECT_THAT(errorWithin([&] { (void)Checkpoint::open(dir / "model.gguf"); }),
                HasSubstr("model.gguf: is a named pipe"));
}

TEST(HostileFiles, FifoIndexAndTokenizerAreRefused) {
    TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "model.safetensors.index.json").c_str(), 0600), 0);
    EXPECT_THAT(errorWithin([&] { (void)Checkpoint::open(dir.path()); }), HasSubstr("index.json: is a named pipe"));
    ASSERT_EQ(::mkfifo((dir / "tokenizer.json").c_str(), 0600), 0);
    EXPECT_THAT(errorWithin([&] { (void)readRegularFile(dir / "tokenizer.json", 1 << 20, "a tokenizer file"); }),
                HasSubstr("tokenizer.json: is a named pipe"));
}

TEST(HostileFiles, ConfigLinkedToADeviceIsRefused) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kHeader, 16));
    std::filesystem::create_symlink("/dev/zero", dir / "config.json");
    EXPECT_THAT(errorWithin([&] { (void)Checkpoint::open(dir.path()); }),
                HasSubstr("config.json: is a character device, not a regular file"));
}

TEST(HostileFiles, ConfigLinkedToARegularFileIsRead) {
    // The Hugging Face cache links every snapshot file to its blob: links to regular files are fine.
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kHeader, 16));
    writeText(dir / "blob", R"({"model_type":"llama","hidden_size":2})");
    std::filesystem::create_symlink(dir / "blob", dir / "config.json");
    EXPECT_EQ(Checkpoint::open(dir.path()).summary().hiddenSize, 2);
}

TEST(HostileFiles, FolderWhereAFileIsExpectedIsRefused) {
    TempDir dir;
    std::filesystem::create_directory(dir / "config.json");
    EXPECT_THAT(errorOf([&] { (void)readJsonFile(dir / "config.json"); }), HasSubstr("config.json: is a folder"));
}

TEST(HostileFiles, DeepNestingIsRefusedNotOverflowed) {
    for (const auto& [open, close] : {std::pair{'[', ']'}, std::pair{'{', '}'}}) {
        std::string text;
        if (open == '[') {
            text = nested(100'000, '[', ']');
        } else {
            for (int i = 0; i < 100'000; ++i) text += R"({"a":)";
            text += "1" + std::string(100'000, '}');
        }
        EXPECT_THAT(errorOf([&] { (void)parseJson(text, "config.json"); }),
                    HasSubstr("config.json: nests deeper than 64 levels"));
    }
    // Exactly at the limit parses: a real config nests 6 levels.
    EXPECT_NO_THROW((void)parseJson(nested(kMaxJsonDepth, '[', ']'), "x"));
}

TEST(HostileFiles, DeepNestingInsideConfigFailsTheOpen) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kHeader, 16));
    writeText(dir / "config.json",
              R"({"model_type":"llama","quantization_config":{"bits":)" + nested(100'000, '[', ']') + "}}");
    EXPECT_THAT(errorOf([&] { (void)Checkpoint::open(dir.path()); }),
                HasSubstr("config.json: nests deeper than 64 levels"));
}

TEST(HostileFiles, OversizedJsonIsRefusedBeforeReading) {
    TempDir dir;
    writeText(dir / "config.json", "{\"a\": \"" + std::string(4096, 'x') + "\"}");
    EXPECT_THAT(errorOf([&] { (void)readJsonFile(dir / "config.json", JsonLimits{.maxBytes = 1024}); }),
                HasSubstr("config.json: is 4105 bytes, more than the 1024 bytes QuantScope reads as a JSON file"));
    EXPECT_EQ(readJsonFile(dir / "config.json", JsonLimits{.maxBytes = 4105})["a"].get<std::string>().size(), 4096u);
}

// safetensors pads a header with spaces; a NUL would end nlohmann's parse, silently dropping the rest
// (serde_json, the reference reader, refuses the file).
TEST(HostileFiles, ANulInTheHeaderIsRefusedNamingItsByte) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kHeader + std::string(" \0  ", 4), 16));
    EXPECT_THAT(
        errorOf([&] { (void)Checkpoint::open(dir.path()); }),
        HasSubstr("model.safetensors: header holds a NUL byte at byte " + std::to_string(8 + kHeader.size() + 1) +
                  " of the file; safetensors pads its header with spaces only"));
    writeBytes(dir / "model.safetensors", safetensorsImage(kHeader + "    ", 16));
    EXPECT_EQ(Checkpoint::open(dir.path()).tensors().size(), 1u);  // spaces are the padding safetensors allows
}

TEST(HostileFiles, ANulInAJsonFileIsRefused) {
    EXPECT_THAT(errorOf([] { (void)parseJson(std::string_view("{\"a\":1}\0{\"b\"", 12), "c.json"); }),
                HasSubstr("c.json: not valid JSON: a NUL byte at byte 7"));
}

TEST(HostileFiles, DuplicateKeysAreRefusedWhereAsked) {
    EXPECT_THAT(errorOf([] { (void)parseJson(R"({"a":1,"a":2})", "h", {.rejectDuplicateKeys = true}); }),
                HasSubstr("h: has the key 'a' twice"));
    EXPECT_EQ(parseJson(R"({"a":1,"a":2})", "h")["a"], 2);  // Python's json keeps the last, as nlohmann does
}

TEST(JsonInteger, RefusesWhatDoesNotFit) {
    const auto error = [](const char* text, IntRange range = {}) {
        return errorOf([&] { (void)jsonInteger(nlohmann::json::parse(text), "config.json: 'bits'", range); });
    };
    EXPECT_THAT(error("4294967300"),
                HasSubstr("config.json: 'bits' is 4294967300, expected an integer from -2147483648 to 2147483647"));
    EXPECT_THAT(error("4294967360", {1, 1 << 20}), HasSubstr("is 4294967360, expected an integer from 1 to 1048576"));
    EXPECT_THAT(error("18446744073709551615"), HasSubstr("is 18446744073709551615"));
    EXPECT_THAT(error("4.5"), HasSubstr("is 4.5, expected an integer"));
    EXPECT_THAT(error("64.9"), HasSubstr("is 64.9"));
    EXPECT_THAT(error("1e300"), HasSubstr("expected an integer"));
    EXPECT_THAT(error("true"), HasSubstr("is true"));
    EXPECT_THAT(error("\"4x\""), HasSubstr("is \"4x\""));
    EXPECT_THAT(error("[4]"), HasSubstr("is [4]"));
    EXPECT_THAT(error("-1", {0, 10}), HasSubstr("is -1, expected an integer from 0 to 10"));
}

TEST(JsonInteger, ReadsWhatProducersWrite) {
    const auto value = [](const char* text) { return jsonInteger(nlohmann::json::parse(text), "k"); };
    EXPECT_EQ(value("128"), 128);
    EXPECT_EQ(value("-1"), -1);
    EXPECT_EQ(value("4.0"), 4);
    EXPECT_EQ(value("\"64\""), 64);
    EXPECT_EQ(jsonInteger(nlohmann::json::parse("9007199254740993"), "k", {0, std::int64_t{1} << 60}),
              9007199254740993);
    const auto object = nlohmann::json::parse(R"({"a":3,"n":null})");
    EXPECT_EQ(jsonIntegerField(object, "a", "f"), 3);
    EXPECT_EQ(jsonIntegerField(object, "n", "f"), std::nullopt);
    EXPECT_EQ(jsonIntegerField(object, "missing", "f"), std::nullopt);
    EXPECT_THAT(errorOf([&] { (void)jsonIntegerField(object, "a", "f.json", {4, 8}); }), HasSubstr("f.json: 'a' is 3"));
}

TEST(JsonInteger, ConfigSizesAreRangeChecked) {
    TempDir dir;
    writeBytes(dir / "model.safetensors", safetensorsImage(kHeader, 16));
    writeText(dir / "config.json", R"({"model_type":"llama","hidden_size":4294967300,"num_hidden_layers":1})");
    EXPECT_THAT(errorOf([&] { (void)Checkpoint::open(dir.path()).summary(); }),
                HasSubstr("config.json: 'hidden_size' is 4294967300, expected an integer from 0 to 2147483647"));
}
