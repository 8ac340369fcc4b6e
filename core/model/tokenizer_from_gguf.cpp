// A GGUF file's tokenizer.ggml.* metadata as tokenizer.json + tokenizer_config.json, read as
// llama.cpp's llama_vocab::load reads it: "gpt2" is byte-level BPE (tokens, merges "a b", the
// pre-tokenizer tokenizer.ggml.pre names), "llama" is SentencePiece BPE (tokens, scores, types).
#include <filesystem>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/tokenizer.h"

#include "tokenizer_gguf_pre.h"
#include "tokenizer_json_parts.h"

namespace qs::model {
namespace {

using nlohmann::json;

class GgufTokenizerKeys {
public:
    GgufTokenizerKeys(const io::GgufMetadata& m, const std::string& source) : m_(m), source_(source) {}

    [[noreturn]] void fail(const std::string& what) const { throw Error(source_ + ": " + what); }

    // The items of an array key whose elements `accept` takes (`what` names them for the message).
    const std::vector<io::GgufValue>& array(const char* key, const char* what,
                                            bool (io::GgufValue::*accept)() const) const {
        const io::GgufArray* a = m_.array(key);
        if (a == nullptr) fail(std::string(key) + " is missing or not an array");
        for (const auto& item : a->items)
            if (!(item.*accept)())
                fail(std::string(key) + " must be an array of " + what + ", but holds a " +
                     io::ggufValueTypeName(item.type()));
        return a->items;
    }

    const std::vector<io::GgufValue>& strings(const char* key) const {
        return array(key, "strings", &io::GgufValue::isString);
    }

    std::vector<std::string> tokens() const {
        std::vector<std::string> out;
        for (const auto& v : strings("tokenizer.ggml.tokens")) out.push_back(*v.asString());
        if (out.empty()) fail("tokenizer.ggml.tokens is empty");
        return out;
    }

    // Numbers per token (types, scores); `fallback` for every token when the key is absent.
    std::vector<double> perToken(const char* key, std::size_t count, double fallback) const {
        if (!m_.contains(key)) return std::vector<double>(count, fallback);
        const auto& items = array(key, "numbers", &io::GgufValue::isNumber);
        if (items.size() < count)
            fail(std::string(key) + " has " + std::to_string(items.size()) + " entries for " + std::to_string(count) +
                 " tokens");
        std::vector<double> out;
        for (std::size_t i = 0; i < count; ++i) out.push_back(*items[i].asNumber());
        return out;
    }

    std::optional<TokenId> tokenId(const char* key, std::size_t vocab, std::optional<TokenId> fallback) const {
        const io::GgufValue* v = m_.find(key);
        if (v == nullptr) return fallback;
        const auto id = v->asInteger();
        if (!id) fail(std::string(key) + " must be an integer");
        if (*id < 0 || static_cast<std::size_t>(*id) >= vocab)
            fail(std::string(key) + " " + std::to_string(*id) + " is outside the vocabulary");
        return static_cast<TokenId>(*id);
    }

    bool flag(const char* key, bool fallback) const { return m_.boolean(key).value_or(fallback); }
    const std::string* text(const char* key) const { return m_.string(key); }

private:
    const io::GgufMetadata& m_;
    const std::string& source_;
};

PieceType pieceType(double type) {
    // A token type is an int32 in llama.cpp; a file may store any number, and casting NaN or 1e300 to
    // int is undefined, so only the valid range is cast.
    if (!(type >= 1.0 && type <= 6.0)) return PieceType::Normal;
    const int t = static_cast<int>(type);
    return t >= 1 && t <= 6 ? static_cast<PieceType>(t) : PieceType::Normal;
}

TokenizerJsonFiles sentencePieceFromGguf(const GgufTokenizerKeys& keys, const std::string& source) {
    const std::vector<std::string> tokens = keys.tokens();
    const std::vector<double> scores = keys.perToken("tokenizer.ggml.scores", tokens.size(), 0.0);
    const std::vector<double> types = keys.perToken("tokenizer.ggml.token_type", tokens.size(), 1.0);
    std::vector<SentencePiece> pieces;
    for (std::size_t i = 0; i < tokens.size(); ++i)
        pieces.push_back({tokens[i], static_cast<float>(scores[i]), pieceType(types[i])});
    // llama.cpp's defaults for a "llama" vocabulary: BOS 1, EOS 2, BOS added.
    const auto bos = keys.tokenId("tokenizer.ggml.bos_token_id", tokens.size(), 1);
    const auto eos = keys.tokenId("tokenizer.ggml.eos_token_id", tokens.size(), 2);
    TokenizerJsonFiles files =
        sentencePieceTokenizerJson(pieces, bos, eos, keys.flag("tokenizer.ggml.add_bos_token", true), source);
    if (!keys.flag("tokenizer.ggml.add_space_prefix", true))
        files.tokenizer["normalizer"]["normalizers"].erase(0);  // drop the Prepend("▁")
    return files;
}

// "a b" as llama.cpp splits it: at the first space after the first byte.
json mergePair(const std::string& merge, std::size_t index, const GgufTokenizerKeys& keys) {
    const auto space = merge.find(' ', 1);
    if (space == std::string::npos)
        keys.fail("tokenizer.ggml.merges[" + std::to_string(index) + "] '" + merge +
                  "' is not two tokens separated by a space");
    return json::array({merge.substr(0, space), merge.substr(space + 1)});
}

TokenizerJsonFiles byteLevelFromGguf(const GgufTokenizerKeys& keys) {
    const std::string* preName = keys.text("tokenizer.ggml.pre");
    const auto pre = ggufPreTokenizerNamed(preName ? *preName : "");
    if (!pre)
        keys.fail("pre-tokenizer '" + (preName ? *preName : std::string()) +
                  "' (tokenizer.ggml.pre) is not supported: gpt-2, qwen2 and llama-bpe (and llama.cpp's aliases of "
                  "them) are");
    const std::vector<std::string> tokens = keys.tokens();
    const std::vector<double> types = keys.perToken("tokenizer.ggml.token_type", tokens.size(), 1.0);
    json vocab = json::object(), added = json::array();
    for (std::size_t id = 0; id < tokens.size(); ++id) {
        if (!vocab.contains(tokens[id]))
            vocab[tokens[id]] = id;  // llama.cpp keeps the last; ids of duplicates are unreachable either way
        const PieceType type = pieceType(types[id]);
        if (type == PieceType::Control || type == PieceType::Unknown || type == PieceType::UserDefined)
            added.push_back(addedTokenJson(tokens[id], static_cast<TokenId>(id), type != PieceType::UserDefined));
    }
    json merges = json::array();
    std::size_t index = 0;
    for (const auto& m : keys.strings("tokenizer.ggml.merges"))
        merges.push_back(mergePair(*m.asString(), index++, keys));
    const auto bos = keys.tokenId("tokenizer.ggml.bos_token_id", tokens.size(), std::nullopt);
    const auto eos = keys.tokenId("tokenizer.ggml.eos_token_id", tokens.size(), std::nullopt);
    const bool addBos = keys.flag("tokenizer.ggml.add_bos_token", pre->addsBos) && bos.has_value();

    TokenizerJsonFiles files;
    const json byteLevel = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
    files.tokenizer = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", std::move(added)},
        {"normalizer", pre->normalizer},
        {"pre_tokenizer", pre->preTokenizer},
        {"post_processor", addBos ? bosPostProcessor(tokens[static_cast<std::size_t>(*bos)], *bos) : byteLevel},
        {"decoder", byteLevel},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", pre->ignoreMerges},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}}}};
    const auto text = [&](std::optional<TokenId> id) {
        return id ? json(tokens[static_cast<std::size_t>(*id)]) : json(nullptr);
    };
    files.config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                    {"add_bos_token", addBos},
                    {"add_prefix_space", false},
                    {"bos_token", text(bos)},
                    {"eos_token", text(eos)},
                    {"clean_up_tokenization_spaces", false}};
    return files;
}

}  // namespace

bool isSupportedGgufPreTokenizer(const std::string& name) { return ggufPreTokenizerNamed(name).has_value(); }

TokenizerJsonFiles tokenizerJsonFromGguf(const io::GgufMetadata& metadata, const std::string& sourceName) {
    const GgufTokenizerKeys keys(metadata, sourceName);
    const std::string* model = metadata.string("tokenizer.ggml.model");
    if (model == nullptr) keys.fail("has no tokenizer (tokenizer.ggml.model is missing)");
    if (*model == "llama") return sentencePieceFromGguf(keys, sourceName);
    if (*model == "gpt2") return byteLevelFromGguf(keys);
    keys.fail("tokenizer model '" + *model + "' (tokenizer.ggml.model) is not supported: gpt2 and llama are");
}

Tokenizer Tokenizer::fromGguf(const io::GgufMetadata& metadata, const std::string& sourceName) {
    const TokenizerJsonFiles files = tokenizerJsonFromGguf(metadata, sourceName);
    std::string tokenizer, config;
    try {
        tokenizer = files.tokenizer.dump();
        config = files.config.dump();
    } catch (const json::exception&) {
        // GGUF strings are bytes, tokenizer.json is text: a token that is not UTF-8 has no JSON form.
        throw Error(sourceName + ": tokenizer.ggml.tokens or .merges hold text that is not valid UTF-8");
    }
    return fromJson(tokenizer, config, sourceName);
}

Tokenizer Tokenizer::forCheckpoint(const io::Checkpoint& checkpoint) {
    const io::GgufFile* gguf = checkpoint.gguf();
    if (gguf == nullptr || std::filesystem::exists(checkpoint.root() / "tokenizer.json"))
        return fromFile(checkpoint.root());
    return fromGguf(gguf->metadata(), gguf->path().string());
}

}  // namespace qs::model
