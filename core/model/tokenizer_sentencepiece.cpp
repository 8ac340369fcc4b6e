// A SentencePiece BPE vocabulary (pieces + scores + types, as GGUF files and llama2.c store Llama-1/2
// tokenizers) turned into the tokenizer.json Hugging Face's converter produces for such a model
// (LlamaConverter, legacy mode), so that it tokenizes as transformers does; Tokenizer::fromSentencePiece
// loads that file.
#include <algorithm>

#include "qs/error.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/tokenizer.h"

#include "tokenizer_bpe.h"
#include "tokenizer_json_parts.h"
#include "tokenizer_utf8.h"

namespace qs::model {
namespace {

using nlohmann::json;

const std::string kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

struct Candidate {
    float score;
    TokenId merged, left, right;
};

// SentencePiece BPE merges the adjacent pair whose concatenation is the best-scoring piece; as
// ranked merges that is every split of every piece into two pieces, ordered by the merged piece's
// score (then by ids, to be deterministic as the converter's stable sort is).
json deriveMerges(const std::vector<SentencePiece>& pieces, const Vocabulary& vocab) {
    std::vector<Candidate> candidates;
    for (std::size_t id = 0; id < pieces.size(); ++id) {
        const SentencePiece& piece = pieces[id];
        if (piece.type != PieceType::Normal && piece.type != PieceType::UserDefined) continue;
        const std::string& text = piece.text;
        std::size_t cut = utf8::charLength(static_cast<unsigned char>(text[0]));
        while (cut < text.size()) {
            const auto left = vocab.find(std::string_view(text).substr(0, cut));
            const auto right = vocab.find(std::string_view(text).substr(cut));
            if (left != vocab.end() && right != vocab.end())
                candidates.push_back({piece.score, static_cast<TokenId>(id), left->second, right->second});
            cut += utf8::charLength(static_cast<unsigned char>(text[cut]));
        }
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.merged != b.merged) return a.merged < b.merged;
        return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    json merges = json::array();
    for (const Candidate& c : candidates)
        merges.push_back(
            {pieces[static_cast<std::size_t>(c.left)].text, pieces[static_cast<std::size_t>(c.right)].text});
    return merges;
}

json spaceMarkDecoder() {
    return {{"type", "Sequence"},
            {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", kSpaceMark}}}, {"content", " "}},
                                      {{"type", "ByteFallback"}},
                                      {{"type", "Fuse"}},
                                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
}

json spaceMarkNormalizer() {
    return {
        {"type", "Sequence"},
        {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", kSpaceMark}},
                                     {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpaceMark}}})}};
}

}  // namespace

TokenizerJsonFiles sentencePieceTokenizerJson(const std::vector<SentencePiece>& pieces, std::optional<TokenId> bosId,
                                              std::optional<TokenId> eosId, bool addBos,
                                              const std::string& sourceName) {
    Vocabulary vocab;
    vocab.reserve(pieces.size());
    json model = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", false},
                  {"ignore_merges", false}};
    json added = json::array();
    for (std::size_t id = 0; id < pieces.size(); ++id) {
        const SentencePiece& piece = pieces[id];
        if (piece.text.empty()) throw Error(sourceName + ": piece " + std::to_string(id) + " is empty");
        if (!vocab.emplace(piece.text, static_cast<TokenId>(id)).second)
            throw Error(sourceName + ": piece " + std::to_string(id) + " ('" + piece.text + "') appears twice");
        if (piece.type == PieceType::Unknown) model["unk_token"] = piece.text;
        if (piece.type == PieceType::Byte) model["byte_fallback"] = true;
        // Control pieces (<s>, </s>) and <unk> are special added tokens; user-defined ones are added
        // tokens matched in the text too.
        const bool special = piece.type == PieceType::Control || piece.type == PieceType::Unknown;
        if (special || piece.type == PieceType::UserDefined)
            added.push_back(addedTokenJson(piece.text, static_cast<TokenId>(id), special));
    }
    const auto checkId = [&](std::optional<TokenId> id, const char* what) {
        if (id && (*id < 0 || static_cast<std::size_t>(*id) >= pieces.size()))
            throw Error(sourceName + ": " + what + " id " + std::to_string(*id) + " is outside the vocabulary");
    };
    checkId(bosId, "BOS");
    checkId(eosId, "EOS");
    model["merges"] = deriveMerges(pieces, vocab);
    json vocabJson = json::object();
    for (std::size_t id = 0; id < pieces.size(); ++id) vocabJson[pieces[id].text] = id;
    model["vocab"] = std::move(vocabJson);

    TokenizerJsonFiles files;
    files.tokenizer = {{"version", "1.0"},
                       {"truncation", nullptr},
                       {"padding", nullptr},
                       {"added_tokens", std::move(added)},
                       {"normalizer", spaceMarkNormalizer()},
                       {"pre_tokenizer", nullptr},
                       {"post_processor", nullptr},
                       {"decoder", spaceMarkDecoder()},
                       {"model", std::move(model)}};
    const auto text = [&](std::optional<TokenId> id) {
        return id ? json(pieces[static_cast<std::size_t>(*id)].text) : json(nullptr);
    };
    if (addBos && bosId)
        files.tokenizer["post_processor"] = bosPostProcessor(pieces[static_cast<std::size_t>(*bosId)].text, *bosId);
    files.config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                    {"add_bos_token", addBos && bosId.has_value()},
                    {"add_eos_token", false},
                    {"bos_token", text(bosId)},
                    {"eos_token", text(eosId)},
                    {"clean_up_tokenization_spaces", false},
                    {"legacy", true}};
    return files;
}

Tokenizer Tokenizer::fromSentencePiece(std::vector<SentencePiece> pieces, std::optional<TokenId> bosId,
                                       std::optional<TokenId> eosId, const std::string& sourceName) {
    // SentencePiece Llama models are run with BOS first.
    const TokenizerJsonFiles files = sentencePieceTokenizerJson(pieces, bosId, eosId, bosId.has_value(), sourceName);
    return fromJson(files.tokenizer.dump(), files.config.dump(), sourceName);
}

}  // namespace qs::model
