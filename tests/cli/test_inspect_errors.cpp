// Bad input: every failure is exit code 2, exactly one line on stderr starting with
// "quantscope-cli: error:", and nothing on stdout.
#include <gtest/gtest.h>

#include <string>

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

using qs::test::runCli;

std::vector<std::byte> bytesOf(const std::string& text) {
    std::vector<std::byte> bytes;
    for (char c : text) bytes.push_back(static_cast<std::byte>(c));
    return bytes;
}

std::vector<std::byte> withLength(std::uint64_t length, const std::string& rest) {
    std::vector<std::byte> bytes;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::byte>((length >> (8 * i)) & 0xFF));
    const auto tail = bytesOf(rest);
    bytes.insert(bytes.end(), tail.begin(), tail.end());
    return bytes;
}

std::vector<std::byte> validImage() {
    return qs::test::safetensorsImage({{"w", "F32", {2, 2}, qs::test::f32Bytes({1, 2, 3, 4})}});
}

void expectOneLineError(const qs::test::CliResult& result, const std::string& what) {
    EXPECT_EQ(result.exitCode, 2) << what;
    EXPECT_EQ(result.out, "") << what;
    EXPECT_EQ(result.err.rfind("quantscope-cli: error: ", 0), 0u) << what << ": " << result.err;
    ASSERT_FALSE(result.err.empty()) << what;
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << what << ": not one line: " << result.err;
}

struct Malformed {
    std::string name;
    std::vector<std::byte> image;
};

std::vector<Malformed> malformedFiles() {
    auto truncated = validImage();
    truncated.resize(truncated.size() - 4);  // the data of "w" ends past the end of the file
    const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    return {
        {"empty", {}},
        {"shorter than the length prefix", bytesOf("abc")},
        {"truncated data", truncated},
        {"header length past the end", withLength(1000, header + "12345678")},
        {"header length overflows", withLength(~0ULL, header)},
        {"not JSON", withLength(8, "not json")},
        {"JSON but not an object", withLength(8, "[1,2,3] ")},
        {"unknown dtype", withLength(header.size() + 1, R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}} )")},
        {"shape and offsets disagree",
         withLength(header.size(), R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})")},
    };
}

TEST(InspectErrors, MalformedFilesAreOneLineErrors) {
    qs::test::TempDir dir;
    for (const Malformed& m : malformedFiles()) {
        const auto path = dir.path() / "bad.safetensors";
        qs::test::writeFile(path, m.image);
        expectOneLineError(runCli({"inspect", path.string()}), m.name);
        expectOneLineError(runCli({"inspect", path.string(), "--json", "--stats"}), m.name + " (--json --stats)");
    }
}

TEST(InspectErrors, MissingPathIsAnError) {
    const auto result = runCli({"inspect", "/nonexistent/quantscope/model.safetensors"});
    expectOneLineError(result, "missing path");
    EXPECT_NE(result.err.find("/nonexistent/quantscope/model.safetensors"), std::string::npos) << result.err;
}

TEST(InspectErrors, FolderWithoutCheckpointIsAnError) {
    qs::test::TempDir dir;
    expectOneLineError(runCli({"inspect", dir.path().string()}), "empty folder");
}

TEST(InspectErrors, BadRegexIsAnError) {
    qs::test::TempDir dir;
    const auto path = dir.path() / "ok.safetensors";
    qs::test::writeFile(path, validImage());
    ASSERT_EQ(runCli({"inspect", path.string()}).exitCode, 0) << "the file itself is fine";
    const auto result = runCli({"inspect", path.string(), "--filter", "(unclosed"});
    expectOneLineError(result, "bad regex");
    EXPECT_NE(result.err.find("(unclosed"), std::string::npos) << result.err;
}

}  // namespace
