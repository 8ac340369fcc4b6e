// Tokenizer::fromSentencePiece: a SentencePiece BPE vocabulary (pieces + scores), as GGUF files
// store Llama-1/2 tokenizers. It is turned into the same parts Hugging Face's converter produces
// for such a model (LlamaConverter, legacy mode), so it tokenizes as transformers does.
#include "qs/model/tokenizer.h"

#include "tokenizer_impl.h"
#include "tokenizer_utf8.h"
#include "qs/error.h"

#include <algorithm>

namespace qs::model {
namespace {

const std::string kSpaceMark = "\xE2\x96\x81";   // U+2581 "▁"

struct Candidate {
    float score;
    TokenId merged, left, right;
};

// SentencePiece BPE merges the adjacent pair whose concatenation is the best-scoring piece; as
// ranked merges that is every split of every piece into two pieces, ordered by the merged piece's
// score (then by ids, to be deterministic as the converter's stable sort is).
MergeList deriveMerges(const std::vector<SentencePiece>& pieces, const Vocabulary& vocab)
{
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
    MergeList merges;
    merges.reserve(candidates.size());
    for (const Candidate& c : candidates)
        merges.emplace_back(pieces[static_cast<std::size_t>(c.left)].text, pieces[static_cast<std::size_t>(c.right)].text);
    return merges;
}

}  // namespace

Tokenizer Tokenizer::fromSentencePiece(std::vector<SentencePiece> pieces, std::optional<TokenId> bosId,
                                       std::optional<TokenId> eosId, const std::string& sourceName)
{
    Vocabulary vocab;
    vocab.reserve(pieces.size());
    BpeOptions options;
    options.fuseUnk = true;
    for (std::size_t id = 0; id < pieces.size(); ++id) {
        const SentencePiece& piece = pieces[id];
        if (piece.text.empty()) throw Error(sourceName + ": piece " + std::to_string(id) + " is empty");
        if (piece.type == PieceType::Unknown) options.unkToken = piece.text;
        if (piece.type == PieceType::Byte) options.byteFallback = true;
        vocab.emplace(piece.text, static_cast<TokenId>(id));
    }
    const MergeList merges = deriveMerges(pieces, vocab);
    auto impl = std::make_unique<Impl>(sourceName, BpeModel(std::move(vocab), merges, options, sourceName));

    // Control pieces (<s>, </s>) and <unk> are special added tokens; user-defined ones are added
    // tokens matched in the text too.
    for (std::size_t id = 0; id < pieces.size(); ++id) {
        const SentencePiece& piece = pieces[id];
        const bool special = piece.type == PieceType::Control || piece.type == PieceType::Unknown;
        if (special || piece.type == PieceType::UserDefined)
            impl->added.add({piece.text, static_cast<TokenId>(id), special});
    }
    impl->normalizer.addPrepend(kSpaceMark);
    impl->normalizer.addReplace(" ", kSpaceMark, sourceName);
    impl->decoder = Decoder::sentencePiece();
    const auto checkId = [&](std::optional<TokenId> id, const char* what) {
        if (id && (*id < 0 || static_cast<std::size_t>(*id) >= pieces.size()))
            throw Error(sourceName + ": " + what + " id " + std::to_string(*id) + " is outside the vocabulary");
        return id;
    };
    impl->bos = checkId(bosId, "BOS");
    impl->eos = checkId(eosId, "EOS");
    impl->addBos = impl->bos.has_value();   // SentencePiece Llama models are run with BOS first
    return Tokenizer(std::move(impl));
}

}  // namespace qs::model
