// Tokenizer tests against the real Qwen3 and GPT-2 vocabularies: ids produced by their own
// implementations (reference_ids.jsonl) and llama.cpp's test vectors (made with HF transformers).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/error.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_writer.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/tokenizer.h"

namespace qs::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kTokenizers = fs::path(QS_TEST_DATA_DIR) / "tokenizers";
const std::string kMarkForTests = "\xE2\x96\x81";  // "▁"

std::string readFile(const fs::path& path) {
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
std::vector<Case> referenceCases(const fs::path& jsonl) {
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
std::vector<Case> llamaCppCases(const std::string& vocab) {
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
void expectAllMatch(const Tokenizer& tokenizer, const std::vector<Case>& cases, const std::string& what) {
    std::size_t matched = 0;
    for (const Case& c : cases) {
        const std::vector<TokenId> ids = tokenizer.encode(c.text);
        if (ids == c.ids)
            ++matched;
        else
            ADD_FAILURE() << what << " " << c.name << ": " << ::testing::PrintToString(ids) << " != expected "
                          << ::testing::PrintToString(c.ids);
    }
    std::cout << what << ": " << matched << "/" << cases.size() << " cases match\n";
    EXPECT_EQ(matched, cases.size());
}

void expectRoundTrips(const Tokenizer& tokenizer, const std::vector<Case>& cases) {
    for (const Case& c : cases) EXPECT_EQ(tokenizer.decode(tokenizer.encode(c.text)), c.text) << c.name;
}

const Tokenizer& qwen3() {
    static const Tokenizer tokenizer = Tokenizer::fromFile(kTokenizers / "qwen3" / "tokenizer.json");
    return tokenizer;
}

const Tokenizer& gpt2() {
    static const Tokenizer tokenizer =
        Tokenizer::fromGpt2Files(kTokenizers / "gpt2" / "encoder.json", kTokenizers / "gpt2" / "vocab.bpe");
    return tokenizer;
}

// ---- Qwen3 (tokenizer.json, merges stored as pairs) ----

TEST(TokenizerQwen3, MatchesReferenceIdsIncludingWholeVerdict) {
    const auto cases = referenceCases(kTokenizers / "qwen3" / "reference_ids.jsonl");
    ASSERT_EQ(cases.size(), 9u);
    ASSERT_EQ(cases.back().ids.size(), 4943u);
    expectAllMatch(qwen3(), cases, "qwen3 reference_ids.jsonl");
}

TEST(TokenizerQwen3, MatchesLlamaCppQwen2Vectors) {
    const auto cases = llamaCppCases("qwen2");
    ASSERT_EQ(cases.size(), 46u);
    expectAllMatch(qwen3(), cases, "ggml-vocab-qwen2");
}

TEST(TokenizerQwen3, DecodeInvertsEncode) {
    expectRoundTrips(qwen3(), referenceCases(kTokenizers / "qwen3" / "reference_ids.jsonl"));
    expectRoundTrips(qwen3(), llamaCppCases("qwen2"));
}

TEST(TokenizerQwen3, VocabularyAndSpecialTokensFromConfig) {
    const Tokenizer& t = qwen3();
    EXPECT_EQ(t.vocabSize(), 151669u);
    EXPECT_EQ(t.bosId(), std::nullopt);
    EXPECT_EQ(t.eosId(), std::optional<TokenId>(151645));
    EXPECT_FALSE(t.addsBosByDefault());
    EXPECT_EQ(t.tokenToId("<think>"), std::optional<TokenId>(151667));
    EXPECT_EQ(t.tokenToId("Hello"), std::optional<TokenId>(9707));
    EXPECT_EQ(t.tokenToId("no such token"), std::nullopt);
    EXPECT_EQ(t.idToToken(11), ",");
    EXPECT_EQ(t.idToToken(220), "\xC4\xA0");  // "Ġ", the byte-level space
    EXPECT_EQ(t.idToToken(151644), "<|im_start|>");
    EXPECT_TRUE(t.isSpecial(151644));
    EXPECT_FALSE(t.isSpecial(151667));  // <think> is an added token but not a special one
    EXPECT_FALSE(t.isSpecial(9707));
    EXPECT_THROW((void)t.idToToken(151669), Error);
}

TEST(TokenizerQwen3, SpecialTokensCanBeReadAsPlainText) {
    const Tokenizer& t = qwen3();
    const std::string text = "<|im_start|>user";
    EXPECT_EQ(t.encode(text), (std::vector<TokenId>{151644, 872}));
    const std::vector<TokenId> plain = t.encode(text, {.parseSpecial = false});
    EXPECT_GT(plain.size(), 2u);
    EXPECT_THAT(plain, ::testing::Not(::testing::Contains(151644)));
    EXPECT_EQ(t.decode(plain), text);
}

TEST(TokenizerQwen3, SkipsSpecialTokensWhenDecodingOnRequest) {
    const Tokenizer& t = qwen3();
    const std::vector<TokenId> ids = t.encode("<|im_start|>user\nhi<|im_end|>", {.addEos = true});
    EXPECT_EQ(ids.back(), 151645);
    EXPECT_EQ(t.decode(ids), "<|im_start|>user\nhi<|im_end|><|im_end|>");
    EXPECT_EQ(t.decode(ids, {.skipSpecial = true}), "user\nhi");
    EXPECT_THROW((void)t.encode("hi", {.addBos = true}), Error);
}

TEST(TokenizerQwen3, SplitMultiByteCharacterDecodesToItsBytes) {
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

TEST(TokenizerQwen3, RejectsInvalidUtf8) {
    try {
        (void)qwen3().encode("ok \xC3(");
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("tokenizer.json"));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("byte 3"));
    }
}

// ---- GPT-2 (encoder.json + vocab.bpe) ----

TEST(TokenizerGpt2, MatchesReferenceIdsIncludingWholeVerdict) {
    const auto cases = referenceCases(kTokenizers / "gpt2" / "reference_ids.jsonl");
    ASSERT_EQ(cases.size(), 9u);
    ASSERT_EQ(cases.back().ids.size(), 5145u);
    // gpt-3-encoder has no special tokens: <|im_start|> is not GPT-2's anyway, so defaults agree.
    expectAllMatch(gpt2(), cases, "gpt2 reference_ids.jsonl");
}

TEST(TokenizerGpt2, MatchesLlamaCppGpt2Vectors) { expectAllMatch(gpt2(), llamaCppCases("gpt-2"), "ggml-vocab-gpt-2"); }

TEST(TokenizerGpt2, DecodeInvertsEncode) {
    expectRoundTrips(gpt2(), referenceCases(kTokenizers / "gpt2" / "reference_ids.jsonl"));
    expectRoundTrips(gpt2(), llamaCppCases("gpt-2"));
}

TEST(TokenizerGpt2, EndOfTextIsSpecial) {
    const Tokenizer& t = gpt2();
    EXPECT_EQ(t.vocabSize(), 50257u);
    EXPECT_EQ(t.eosId(), std::optional<TokenId>(50256));
    EXPECT_EQ(t.encode("a<|endoftext|>"), (std::vector<TokenId>{64, 50256}));
    const std::vector<TokenId> plain = t.encode("<|endoftext|>", {.parseSpecial = false});
    EXPECT_THAT(plain, ::testing::Not(::testing::Contains(50256)));
    EXPECT_EQ(t.decode(plain), "<|endoftext|>");
}

TEST(TokenizerGpt2, MissingFileIsAnErrorNamingIt) {
    try {
        (void)Tokenizer::fromGpt2Files(kTokenizers / "gpt2" / "encoder.json", kTokenizers / "gpt2" / "missing.bpe");
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("missing.bpe"));
    }
}

// ---- Llama-2 (SentencePiece vocabulary with scores, read from a GGUF file) ----

const fs::path kLlama2Gguf = fs::path(QS_TEST_DATA_DIR) / "gguf" / "llama-2-tiny-random.gguf";

// The tokenizer llama.cpp would build from the file: tokenizer.ggml.model "llama" with its 32,000
// pieces, scores and types, BOS 1, EOS 2.
const Tokenizer& llama2() {
    static const Tokenizer tokenizer =
        Tokenizer::fromGguf(qs::io::GgufFile::open(kLlama2Gguf).metadata(), kLlama2Gguf.string());
    return tokenizer;
}

// The same vocabulary handed over as pieces (the API llama2.c-style vocabularies use).
std::vector<SentencePiece> llama2Pieces() {
    const auto file = qs::io::GgufFile::open(kLlama2Gguf);
    const auto* texts = file.metadata().array("tokenizer.ggml.tokens");
    const auto* scores = file.metadata().array("tokenizer.ggml.scores");
    const auto* types = file.metadata().array("tokenizer.ggml.token_type");
    std::vector<SentencePiece> pieces;
    for (std::size_t i = 0; i < texts->items.size(); ++i)
        pieces.push_back({*texts->items[i].asString(), static_cast<float>(*scores->items[i].asNumber()),
                          static_cast<PieceType>(*types->items[i].asInteger())});
    return pieces;
}

TEST(TokenizerLlama2, MatchesLlamaCppLlamaSpmVectors) {
    expectAllMatch(llama2(), llamaCppCases("llama-spm"), "ggml-vocab-llama-spm");
}

TEST(TokenizerLlama2, DecodeInvertsEncode) {
    expectRoundTrips(llama2(), llamaCppCases("llama-spm"));
    expectRoundTrips(llama2(), referenceCases(kTokenizers / "qwen3" / "reference_ids.jsonl"));
}

TEST(TokenizerLlama2, BosAndByteFallback) {
    const Tokenizer& t = llama2();
    EXPECT_EQ(t.vocabSize(), 32000u);
    EXPECT_EQ(t.bosId(), std::optional<TokenId>(1));
    EXPECT_EQ(t.eosId(), std::optional<TokenId>(2));
    EXPECT_TRUE(t.addsBosByDefault());
    const std::vector<TokenId> ids = t.encode("Hello", {.addBos = true});
    ASSERT_EQ(ids.front(), 1);
    EXPECT_EQ(t.idToToken(ids[1]), "\xE2\x96\x81Hello");
    // U+FDFD is not a Llama-2 piece: it falls back to its three bytes <0xEF><0xB7><0xBD> (ids 3 + byte).
    EXPECT_EQ(t.encode("\xEF\xB7\xBD"), (std::vector<TokenId>{29871, 3 + 0xEF, 3 + 0xB7, 3 + 0xBD}));
    EXPECT_EQ(t.decode(std::vector<TokenId>{1, 15043}, {.skipSpecial = true}), "Hello");
}

TEST(TokenizerLlama2, PiecesGiveTheSameTokenizerAsTheGgufMetadata) {
    const Tokenizer fromPieces = Tokenizer::fromSentencePiece(llama2Pieces(), 1, 2, "pieces");
    expectAllMatch(fromPieces, llamaCppCases("llama-spm"), "ggml-vocab-llama-spm (pieces)");
}

// ---- Tokenizers stored as GGUF metadata and read back ----

// Writes the metadata as a GGUF file (no tensors) and builds the tokenizer from what is read back.
Tokenizer throughGguf(const qs::io::GgufMetadata& metadata, const fs::path& path) {
    {
        qs::io::GgufWriter writer(path, {.overwrite = true});
        for (const auto& [key, value] : metadata.entries()) writer.set(key, value);
        writer.finish();
    }
    return Tokenizer::fromGguf(qs::io::GgufFile::open(path).metadata(), path.string());
}

json readJson(const fs::path& path) { return json::parse(readFile(path)); }

TEST(TokenizerGguf, Qwen3StoredAsGpt2ModelTokenizesAsItsTokenizerJson) {
    const fs::path dir = kTokenizers / "qwen3";
    const auto metadata = ggufTokenizerFromJson(readJson(dir / "tokenizer.json"),
                                                readJson(dir / "tokenizer_config.json"), 151936, "qwen3");
    EXPECT_EQ(*metadata.string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(*metadata.string("tokenizer.ggml.pre"), "qwen2");
    const auto& tokens = metadata.array("tokenizer.ggml.tokens")->items;
    const auto& types = metadata.array("tokenizer.ggml.token_type")->items;
    ASSERT_EQ(tokens.size(), 151936u);  // the embedding's rows: padded as llama.cpp's converter pads
    EXPECT_EQ(*tokens[151643].asString(), "<|endoftext|>");
    EXPECT_EQ(*types[151643].asInteger(), 3);  // control
    EXPECT_EQ(*tokens[151935].asString(), "[PAD151935]");
    EXPECT_EQ(*types[151935].asInteger(), 5);  // unused
    EXPECT_EQ(*types[0].asInteger(), 1);       // normal
    EXPECT_EQ(metadata.array("tokenizer.ggml.merges")->items.size(), 151387u);
    EXPECT_EQ(*metadata.integer("tokenizer.ggml.eos_token_id"),
              151645);  // tokenizer_config.json's eos_token <|im_end|>
    EXPECT_EQ(metadata.boolean("tokenizer.ggml.add_bos_token"), false);

    const fs::path file = fs::temp_directory_path() / ("qs-tokenizer-qwen3-" + std::to_string(::getpid()) + ".gguf");
    const Tokenizer t = throughGguf(metadata, file);
    fs::remove(file);
    expectAllMatch(t, llamaCppCases("qwen2"), "ggml-vocab-qwen2 through GGUF");
    expectAllMatch(t, referenceCases(dir / "reference_ids.jsonl"), "qwen3 reference_ids.jsonl through GGUF");
    EXPECT_EQ(t.vocabSize(), 151936u);
    EXPECT_EQ(t.eosId(), std::optional<TokenId>(151645));
    EXPECT_TRUE(t.isSpecial(151644));
}

TEST(TokenizerGguf, SentencePieceVocabularyWrittenAndReadBack) {
    const auto metadata = ggufTokenizerFromSentencePiece(llama2Pieces(), 1, 2, true);
    EXPECT_EQ(*metadata.string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(*metadata.integer("tokenizer.ggml.unknown_token_id"), 0);
    const fs::path file = fs::temp_directory_path() / ("qs-tokenizer-spm-" + std::to_string(::getpid()) + ".gguf");
    const Tokenizer t = throughGguf(metadata, file);
    fs::remove(file);
    expectAllMatch(t, llamaCppCases("llama-spm"), "ggml-vocab-llama-spm through GGUF");
    EXPECT_TRUE(t.addsBosByDefault());
}

TEST(TokenizerGguf, RefusesTokenizersItCannotRunNamingTheFileAndKey) {
    qs::io::GgufMetadata m;
    m.set("tokenizer.ggml.model", qs::io::GgufValue::string("bert"));
    m.set("tokenizer.ggml.tokens", qs::io::GgufValue::strings({"a", "b"}));
    EXPECT_THAT([&] { (void)Tokenizer::fromGguf(m, "x.gguf"); },
                ::testing::ThrowsMessage<Error>(
                    ::testing::AllOf(::testing::HasSubstr("x.gguf"), ::testing::HasSubstr("'bert'"))));
    m.set("tokenizer.ggml.model", qs::io::GgufValue::string("gpt2"));
    m.set("tokenizer.ggml.pre", qs::io::GgufValue::string("deepseek-llm"));
    EXPECT_THAT([&] { (void)Tokenizer::fromGguf(m, "x.gguf"); },
                ::testing::ThrowsMessage<Error>(::testing::HasSubstr("'deepseek-llm'")));
    m.set("tokenizer.ggml.pre", qs::io::GgufValue::string("gpt-2"));
    m.set("tokenizer.ggml.merges", qs::io::GgufValue::f32s({1.0f}));
    EXPECT_THAT(
        [&] { (void)Tokenizer::fromGguf(m, "x.gguf"); },
        ::testing::ThrowsMessage<Error>(::testing::HasSubstr("tokenizer.ggml.merges must be an array of strings")));
    qs::io::GgufMetadata none;
    EXPECT_THAT([&] { (void)Tokenizer::fromGguf(none, "x.gguf"); },
                ::testing::ThrowsMessage<Error>(::testing::HasSubstr("has no tokenizer")));
}

TEST(TokenizerGguf, Llama2cTokenizerBinBecomesTypedPieces) {
    const auto pieces = readLlama2cTokenizer(fs::path(QS_TEST_DATA_DIR) / "stories260K" / "tok512.bin", 512);
    ASSERT_EQ(pieces.size(), 512u);
    EXPECT_EQ(pieces[0].text, "<unk>");
    EXPECT_EQ(pieces[0].type, PieceType::Unknown);
    EXPECT_EQ(pieces[1].text, "<s>");
    EXPECT_EQ(pieces[2].type, PieceType::Control);
    EXPECT_EQ(pieces[3].text, "<0x00>");
    EXPECT_EQ(pieces[3].type, PieceType::Byte);
    EXPECT_EQ(pieces[259].text, kMarkForTests + "t");  // llama2.c's " t" with its space as "▁"
    EXPECT_EQ(pieces[260].score, -1.0f);
    const Tokenizer t = Tokenizer::fromSentencePiece(pieces, 1, 2, "tok512.bin");
    EXPECT_EQ(t.decode(t.encode("Once upon a time")), "Once upon a time");
}

// ---- Small hand-made tokenizer.json files: Metaspace, byte fallback, merge formats ----

const std::string kMark = "\xE2\x96\x81";  // "▁"

// A Llama-2-like vocabulary: <unk> <s> </s>, the 256 byte pieces, then pieces spelling "hello".
json sentencePieceLikeJson(bool mergesAsPairs) {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 3 + b;
    }
    const std::vector<std::string> pieces = {
        kMark, "h", "e", "l", "o", kMark + "h", "ll", kMark + "he", kMark + "hell", kMark + "hello"};
    for (std::size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = static_cast<int>(259 + i);
    const std::vector<std::pair<std::string, std::string>> merges = {
        {kMark, "h"}, {"l", "l"}, {kMark + "h", "e"}, {kMark + "he", "ll"}, {kMark + "hell", "o"}};
    json mergeList = json::array();
    for (const auto& [a, b] : merges) mergeList.push_back(mergesAsPairs ? json::array({a, b}) : json(a + " " + b));
    json addedTokens = json::array();
    for (int id = 0; id < 3; ++id)
        addedTokens.push_back({{"id", id},
                               {"content", id == 0   ? "<unk>"
                                           : id == 1 ? "<s>"
                                                     : "</s>"},
                               {"special", true},
                               {"normalized", false},
                               {"lstrip", false},
                               {"rstrip", false},
                               {"single_word", false}});
    return {
        {"added_tokens", addedTokens},
        {"normalizer",
         {{"type", "Sequence"},
          {"normalizers",
           {{{"type", "Prepend"}, {"prepend", kMark}},
            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMark}}}}}},
        {"pre_tokenizer", nullptr},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single",
           {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"}, {"pattern", {{"String", kMark}}}, {"content", " "}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
        {"model",
         {{"type", "BPE"},
          {"unk_token", "<unk>"},
          {"byte_fallback", true},
          {"fuse_unk", true},
          {"vocab", vocab},
          {"merges", mergeList}}},
    };
}

TEST(TokenizerJson, SentencePieceStyleNormalizerAndByteFallback) {
    for (const bool pairs : {false, true}) {
        const Tokenizer t = Tokenizer::fromJson(sentencePieceLikeJson(pairs).dump(), "", "spm-like.json");
        EXPECT_EQ(t.encode("hello"), (std::vector<TokenId>{268})) << pairs;
        // " " -> "▁" alone; "ü" is not a piece, so its bytes C3 BC.
        EXPECT_EQ(t.encode("hello \xC3\xBC"), (std::vector<TokenId>{268, 259, 3 + 0xC3, 3 + 0xBC}));
        // The text after an added token gets its own "▁" prefix (Hugging Face's legacy Llama behaviour).
        EXPECT_EQ(t.encode("<s>oh"), (std::vector<TokenId>{1, 259, 263, 260}));
        EXPECT_EQ(t.decode(t.encode("hello \xC3\xBC hello")), "hello \xC3\xBC hello");
        EXPECT_EQ(t.encode(""), std::vector<TokenId>{});
        EXPECT_TRUE(t.addsBosByDefault());
        EXPECT_EQ(t.bosId(), std::optional<TokenId>(1));
    }
}

TEST(TokenizerJson, MetaspacePreTokenizerPrependsOnlyAtInputStartWhenFirst) {
    json spec = sentencePieceLikeJson(true);
    spec["normalizer"] = nullptr;
    spec["pre_tokenizer"] = {
        {"type", "Metaspace"}, {"replacement", kMark}, {"prepend_scheme", "first"}, {"split", false}};
    spec["decoder"] = {{"type", "Metaspace"}, {"replacement", kMark}, {"prepend_scheme", "first"}};
    const Tokenizer t = Tokenizer::fromJson(spec.dump(), "", "metaspace.json");
    EXPECT_EQ(t.encode("hello hello"), (std::vector<TokenId>{268, 268}));
    // After <s> the stretch does not start the input: no "▁", so "hello" is h e ll o.
    EXPECT_EQ(t.encode("<s>hello"), (std::vector<TokenId>{1, 260, 261, 265, 263}));
    EXPECT_EQ(t.decode(t.encode("hello hello")), "hello hello");
}

TEST(TokenizerJson, AddedTokenStripsWhitespaceWhenAsked) {
    json spec = sentencePieceLikeJson(false);
    spec["model"]["vocab"]["<x>"] = 300;
    spec["added_tokens"].push_back({{"id", 300},
                                    {"content", "<x>"},
                                    {"special", false},
                                    {"normalized", false},
                                    {"lstrip", false},
                                    {"rstrip", false},
                                    {"single_word", false}});
    const Tokenizer plain = Tokenizer::fromJson(spec.dump(), "", "added.json");
    // "hello " -> "▁hello▁", then <x>, then " hello" -> "▁▁hello".
    EXPECT_EQ(plain.encode("hello <x> hello"), (std::vector<TokenId>{268, 259, 300, 259, 268}));
    spec["added_tokens"].back()["lstrip"] = true;
    spec["added_tokens"].back()["rstrip"] = true;
    const Tokenizer stripping = Tokenizer::fromJson(spec.dump(), "", "added.json");
    EXPECT_EQ(stripping.encode("hello <x> hello"), (std::vector<TokenId>{268, 300, 268}));
    EXPECT_FALSE(stripping.isSpecial(300));
}

TEST(TokenizerJson, EncodesFromSeveralThreadsAtOnce) {
    const Tokenizer& t = gpt2();
    const std::string text = readFile(kTokenizers / "text" / "the-verdict.txt");
    const std::vector<TokenId> expected = referenceCases(kTokenizers / "gpt2" / "reference_ids.jsonl").back().ids;
    std::vector<std::vector<TokenId>> results(4);
    std::vector<std::thread> threads;
    for (auto& result : results) threads.emplace_back([&] { result = t.encode(text); });
    for (auto& thread : threads) thread.join();
    for (const auto& result : results) EXPECT_EQ(result, expected);
}

#ifdef QS_TOKENIZER_NFC
TEST(TokenizerQwen3, NormalizesToNfcAsDeclared) {
    // "e" + U+0301 COMBINING ACUTE ACCENT is "é" (U+00E9) after NFC.
    EXPECT_EQ(qwen3().encode("caf"
                             "e\xCC\x81"),
              qwen3().encode("caf\xC3\xA9"));
}
#endif

TEST(TokenizerJson, ConfigGivesBosAndEos) {
    const std::string config = R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>", "add_bos_token": false})";
    const Tokenizer t = Tokenizer::fromJson(sentencePieceLikeJson(false).dump(), config, "spm-like.json");
    EXPECT_EQ(t.bosId(), std::optional<TokenId>(1));
    EXPECT_EQ(t.eosId(), std::optional<TokenId>(2));
    EXPECT_FALSE(t.addsBosByDefault());
    EXPECT_EQ(t.encode("hello", {.addBos = true, .addEos = true}), (std::vector<TokenId>{1, 268, 2}));
}

TEST(TokenizerJson, BadFilesAreErrorsNamingTheFile) {
    json spec = sentencePieceLikeJson(false);
    spec["model"]["merges"].push_back("x y");
    EXPECT_THROW((void)Tokenizer::fromJson(spec.dump(), "", "bad.json"), Error);
    try {
        (void)Tokenizer::fromJson("{\"model\": ", "", "truncated.json");
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("truncated.json"));
    }
    json unigram = sentencePieceLikeJson(false);
    unigram["model"]["type"] = "Unigram";
    EXPECT_THROW((void)Tokenizer::fromJson(unigram.dump(), "", "unigram.json"), Error);
    EXPECT_THROW((void)Tokenizer::fromFile(kTokenizers / "no-such-dir"), Error);
}

// Found by fuzz_tokenizer_json (fuzz/regressions/tokenizer_json): a token id of 8.7e53 was converted
// to int by nlohmann (undefined behaviour). Ids are integers from 0 to 2^31 - 1, or the file is refused.
TEST(Tokenizer, TokenIdsThatAreNotIntegersInRangeAreRefused) {
    const auto withId = [](const json& id) {
        json spec = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", id}}}, {"merges", json::array()}}}};
        return spec.dump();
    };
    EXPECT_NO_THROW((void)Tokenizer::fromJson(withId(1), "", "ok.json"));
    for (const json& id : {json(8.71111e53), json(4294967296ull), json(-1), json(1.5), json("x")}) {
        try {
            (void)Tokenizer::fromJson(withId(id), "", "bad.json");
            ADD_FAILURE() << id << " accepted";
        } catch (const Error& e) {
            EXPECT_THAT(e.what(), testing::HasSubstr("bad.json: model.vocab['b'] is ")) << id;
        }
    }
    json added = json::parse(withId(1));
    added["added_tokens"] = {{{"id", -5}, {"content", "<x>"}}};
    EXPECT_THROW((void)Tokenizer::fromJson(added.dump(), "", "added.json"), Error);
}

}  // namespace
}  // namespace qs::model
