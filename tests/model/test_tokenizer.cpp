// Tokenizer tests against the real Qwen3 and GPT-2 vocabularies: ids produced by their own
// implementations (reference_ids.jsonl) and llama.cpp's test vectors (made with HF transformers).
#include "qs/error.h"
#include "qs/model/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace qs::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kTokenizers = fs::path(QS_TEST_DATA_DIR) / "tokenizers";

std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

struct Case {
    std::string name;
    std::string text;
    std::vector<TokenId> ids;
};

// reference_ids.jsonl: {"text": ..., "ids": [...]} or {"text_file": "../../text/x.txt", "ids": [...]};
// the text files live in tokenizers/text/.
std::vector<Case> referenceCases(const fs::path& jsonl)
{
    std::vector<Case> cases;
    std::istringstream lines(readFile(jsonl));
    std::string line;
    while (std::getline(lines, line)) {
        if (line.empty()) continue;
        const json entry = json::parse(line);
        Case c;
        if (entry.contains("text_file")) {
            const fs::path file = fs::path(entry.at("text_file").get<std::string>()).filename();
            c.name = file.string();
            c.text = readFile(kTokenizers / "text" / file);
        } else {
            c.text = entry.at("text").get<std::string>();
            c.name = c.text.substr(0, 40);
        }
        c.ids = entry.at("ids").get<std::vector<TokenId>>();
        cases.push_back(std::move(c));
    }
    return cases;
}

// llama.cpp's ggml-vocab-*.gguf.inp/.out: inputs separated by "\n__ggml_vocab_test__\n" (the file
// ends with that separator, leaving an empty last piece), one line of space-separated ids per input.
std::vector<Case> llamaCppCases(const std::string& vocab)
{
    const fs::path dir = kTokenizers / "llama.cpp-test-vectors";
    const std::string inputs = readFile(dir / ("ggml-vocab-" + vocab + ".gguf.inp"));
    std::vector<std::string> texts;
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::size_t start = 0;
    for (std::size_t at = inputs.find(separator); at != std::string::npos; at = inputs.find(separator, start)) {
        texts.push_back(inputs.substr(start, at - start));
        start = at + separator.size();
    }
    EXPECT_EQ(start, inputs.size()) << "text after the last separator";

    std::istringstream outputs(readFile(dir / ("ggml-vocab-" + vocab + ".gguf.out")));
    std::vector<Case> cases;
    std::string line;
    for (const std::string& text : texts) {
        EXPECT_TRUE(std::getline(outputs, line)) << "fewer .out lines than inputs";
        std::istringstream numbers(line);
        std::vector<TokenId> ids;
        for (TokenId id; numbers >> id;) ids.push_back(id);
        cases.push_back({"case " + std::to_string(cases.size()), text, std::move(ids)});
    }
    EXPECT_FALSE(std::getline(outputs, line)) << "more .out lines than inputs";
    return cases;
}

// Compares every case and reports how many matched, so one wrong merge does not hide others.
void expectAllMatch(const Tokenizer& tokenizer, const std::vector<Case>& cases, const std::string& what)
{
    std::size_t matched = 0;
    for (const Case& c : cases) {
        const std::vector<TokenId> ids = tokenizer.encode(c.text);
        if (ids == c.ids) ++matched;
        else ADD_FAILURE() << what << " " << c.name << ": " << ::testing::PrintToString(ids) << " != expected "
                           << ::testing::PrintToString(c.ids);
    }
    std::cout << what << ": " << matched << "/" << cases.size() << " cases match\n";
    EXPECT_EQ(matched, cases.size());
}

void expectRoundTrips(const Tokenizer& tokenizer, const std::vector<Case>& cases)
{
    for (const Case& c : cases) EXPECT_EQ(tokenizer.decode(tokenizer.encode(c.text)), c.text) << c.name;
}

const Tokenizer& qwen3()
{
    static const Tokenizer tokenizer = Tokenizer::fromFile(kTokenizers / "qwen3" / "tokenizer.json");
    return tokenizer;
}

const Tokenizer& gpt2()
{
    static const Tokenizer tokenizer =
        Tokenizer::fromGpt2Files(kTokenizers / "gpt2" / "encoder.json", kTokenizers / "gpt2" / "vocab.bpe");
    return tokenizer;
}

// ---- Qwen3 (tokenizer.json, merges stored as pairs) ----

TEST(TokenizerQwen3, MatchesReferenceIdsIncludingWholeVerdict)
{
    const auto cases = referenceCases(kTokenizers / "qwen3" / "reference_ids.jsonl");
    ASSERT_EQ(cases.size(), 9u);
    ASSERT_EQ(cases.back().ids.size(), 4943u);
    expectAllMatch(qwen3(), cases, "qwen3 reference_ids.jsonl");
}

TEST(TokenizerQwen3, MatchesLlamaCppQwen2Vectors)
{
    const auto cases = llamaCppCases("qwen2");
    ASSERT_EQ(cases.size(), 46u);
    expectAllMatch(qwen3(), cases, "ggml-vocab-qwen2");
}

TEST(TokenizerQwen3, DecodeInvertsEncode)
{
    expectRoundTrips(qwen3(), referenceCases(kTokenizers / "qwen3" / "reference_ids.jsonl"));
    expectRoundTrips(qwen3(), llamaCppCases("qwen2"));
}

TEST(TokenizerQwen3, VocabularyAndSpecialTokensFromConfig)
{
    const Tokenizer& t = qwen3();
    EXPECT_EQ(t.vocabSize(), 151669u);
    EXPECT_EQ(t.bosId(), std::nullopt);
    EXPECT_EQ(t.eosId(), std::optional<TokenId>(151645));
    EXPECT_FALSE(t.addsBosByDefault());
    EXPECT_EQ(t.tokenToId("<think>"), std::optional<TokenId>(151667));
    EXPECT_EQ(t.tokenToId("Hello"), std::optional<TokenId>(9707));
    EXPECT_EQ(t.tokenToId("no such token"), std::nullopt);
    EXPECT_EQ(t.idToToken(11), ",");
    EXPECT_EQ(t.idToToken(220), "\xC4\xA0");   // "Ġ", the byte-level space
    EXPECT_EQ(t.idToToken(151644), "<|im_start|>");
    EXPECT_TRUE(t.isSpecial(151644));
    EXPECT_FALSE(t.isSpecial(151667));   // <think> is an added token but not a special one
    EXPECT_FALSE(t.isSpecial(9707));
    EXPECT_THROW((void)t.idToToken(151669), Error);
}

TEST(TokenizerQwen3, SpecialTokensCanBeReadAsPlainText)
{
    const Tokenizer& t = qwen3();
    const std::string text = "<|im_start|>user";
    EXPECT_EQ(t.encode(text), (std::vector<TokenId>{151644, 872}));
    const std::vector<TokenId> plain = t.encode(text, {.parseSpecial = false});
    EXPECT_GT(plain.size(), 2u);
    EXPECT_THAT(plain, ::testing::Not(::testing::Contains(151644)));
    EXPECT_EQ(t.decode(plain), text);
}

TEST(TokenizerQwen3, SkipsSpecialTokensWhenDecodingOnRequest)
{
    const Tokenizer& t = qwen3();
    const std::vector<TokenId> ids = t.encode("<|im_start|>user\nhi<|im_end|>", {.addEos = true});
    EXPECT_EQ(ids.back(), 151645);
    EXPECT_EQ(t.decode(ids), "<|im_start|>user\nhi<|im_end|><|im_end|>");
    EXPECT_EQ(t.decode(ids, {.skipSpecial = true}), "user\nhi");
    EXPECT_THROW((void)t.encode("hi", {.addBos = true}), Error);
}

TEST(TokenizerQwen3, SplitMultiByteCharacterDecodesToItsBytes)
{
    // " ﷽" (U+FDFD, 3 bytes) is three byte-level tokens in Qwen3 (the end of a reference line);
    // each decodes to its bytes and the pieces concatenate back to the text.
    const Tokenizer& t = qwen3();
    const std::string text = " \xEF\xB7\xBD";
    const std::vector<TokenId> ids = t.encode(text);
    ASSERT_EQ(ids, (std::vector<TokenId>{32495, 115, 121}));
    std::string pieces;
    for (const TokenId id : ids) pieces += t.decode(std::vector<TokenId>{id});
    EXPECT_EQ(pieces, text);
    EXPECT_EQ(t.decode(std::vector<TokenId>{32495}), " \xEF");
}

TEST(TokenizerQwen3, RejectsInvalidUtf8)
{
    try {
        (void)qwen3().encode("ok \xC3(");
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("tokenizer.json"));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("byte 3"));
    }
}

// ---- GPT-2 (encoder.json + vocab.bpe) ----

TEST(TokenizerGpt2, MatchesReferenceIdsIncludingWholeVerdict)
{
    const auto cases = referenceCases(kTokenizers / "gpt2" / "reference_ids.jsonl");
    ASSERT_EQ(cases.size(), 9u);
    ASSERT_EQ(cases.back().ids.size(), 5145u);
    // gpt-3-encoder has no special tokens: <|im_start|> is not GPT-2's anyway, so defaults agree.
    expectAllMatch(gpt2(), cases, "gpt2 reference_ids.jsonl");
}

TEST(TokenizerGpt2, MatchesLlamaCppGpt2Vectors)
{
    expectAllMatch(gpt2(), llamaCppCases("gpt-2"), "ggml-vocab-gpt-2");
}

TEST(TokenizerGpt2, DecodeInvertsEncode)
{
    expectRoundTrips(gpt2(), referenceCases(kTokenizers / "gpt2" / "reference_ids.jsonl"));
    expectRoundTrips(gpt2(), llamaCppCases("gpt-2"));
}

TEST(TokenizerGpt2, EndOfTextIsSpecial)
{
    const Tokenizer& t = gpt2();
    EXPECT_EQ(t.vocabSize(), 50257u);
    EXPECT_EQ(t.eosId(), std::optional<TokenId>(50256));
    EXPECT_EQ(t.encode("a<|endoftext|>"), (std::vector<TokenId>{64, 50256}));
    const std::vector<TokenId> plain = t.encode("<|endoftext|>", {.parseSpecial = false});
    EXPECT_THAT(plain, ::testing::Not(::testing::Contains(50256)));
    EXPECT_EQ(t.decode(plain), "<|endoftext|>");
}

TEST(TokenizerGpt2, MissingFileIsAnErrorNamingIt)
{
    try {
        (void)Tokenizer::fromGpt2Files(kTokenizers / "gpt2" / "encoder.json", kTokenizers / "gpt2" / "missing.bpe");
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("missing.bpe"));
    }
}

}  // namespace
}  // namespace qs::model
