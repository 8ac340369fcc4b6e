#include "qs/model/tokenizer.h"

#include <limits>

#include "qs/error.h"
#include "qs/io/json_file.h"
#include "qs/io/json_value.h"
#include "qs/io/regular_file.h"

#include "tokenizer_impl.h"
#include "tokenizer_utf8.h"

namespace qs::model {

std::string readTokenizerFile(const std::filesystem::path& path) {
    return io::readRegularFile(path, io::kMaxTokenizerJsonBytes, "a tokenizer file");
}

TokenId jsonTokenId(const nlohmann::json& value, const std::string& where) {
    return static_cast<TokenId>(io::jsonInteger(value, where, {0, std::numeric_limits<TokenId>::max()}));
}

namespace {

// Normalizes one stretch between raw-matched added tokens, then matches the added tokens declared
// "normalized", and runs the pieces in between through pre-tokenizer and BPE.
void encodeStretch(const Tokenizer::Impl& impl, std::string_view text, bool atInputStart, bool parseSpecial,
                   std::vector<TokenId>& ids) {
    const std::string normalized = impl.normalizer.isIdentity() ? std::string(text) : impl.normalizer.apply(text);
    for (const TextSegment& segment : impl.added.split(normalized, true, parseSpecial)) {
        if (segment.token) {
            ids.push_back(*segment.token);
            continue;
        }
        for (const std::string& word : impl.preTokenizer.split(segment.text, atInputStart && segment.offset == 0))
            impl.model.encodeWord(word, ids);
    }
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
    if (const auto bad = utf8::firstInvalidByte(text))
        throw Error(impl_->sourceName + ": text to encode is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
    std::vector<TokenId> ids;
    ids.reserve(text.size() / 3 + 2);
    if (options.addBos) {
        if (!impl_->bos) throw Error(impl_->sourceName + ": BOS requested but the tokenizer has no BOS token");
        ids.push_back(*impl_->bos);
    }
    for (const TextSegment& segment : impl_->added.split(text, false, options.parseSpecial)) {
        if (segment.token)
            ids.push_back(*segment.token);
        else
            encodeStretch(*impl_, segment.text, segment.offset == 0, options.parseSpecial, ids);
    }
    if (options.addEos) {
        if (!impl_->eos) throw Error(impl_->sourceName + ": EOS requested but the tokenizer has no EOS token");
        ids.push_back(*impl_->eos);
    }
    return ids;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const TokenId id : ids) {
        if (const AddedToken* added = impl_->added.byId(id)) {
            if (!(options.skipSpecial && added->special)) tokens.push_back(added->content);
            continue;
        }
        tokens.push_back(idToToken(id));
    }
    return impl_->decoder.decode(std::move(tokens));
}

std::size_t Tokenizer::vocabSize() const {
    const auto modelSize = impl_->model.tokens().size();
    return std::max(modelSize, static_cast<std::size_t>(impl_->added.maxId() + 1));
}

std::optional<TokenId> Tokenizer::tokenToId(std::string_view token) const {
    if (const AddedToken* added = impl_->added.byContent(token)) return added->id;
    const auto& vocab = impl_->model.vocabulary();
    if (const auto it = vocab.find(token); it != vocab.end()) return it->second;
    return std::nullopt;
}

const std::string& Tokenizer::idToToken(TokenId id) const {
    if (const AddedToken* added = impl_->added.byId(id)) return added->content;
    const auto& tokens = impl_->model.tokens();
    if (id < 0 || static_cast<std::size_t>(id) >= tokens.size() || tokens[static_cast<std::size_t>(id)].empty())
        throw Error(impl_->sourceName + ": token id " + std::to_string(id) + " is not in the vocabulary");
    return tokens[static_cast<std::size_t>(id)];
}

bool Tokenizer::isSpecial(TokenId id) const {
    const AddedToken* added = impl_->added.byId(id);
    return added && added->special;
}

std::optional<TokenId> Tokenizer::bosId() const { return impl_->bos; }
std::optional<TokenId> Tokenizer::eosId() const { return impl_->eos; }
bool Tokenizer::addsBosByDefault() const { return impl_->addBos; }

}  // namespace qs::model
