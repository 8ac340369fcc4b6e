// tokenizer.ggml.* for the GGUF writer, as llama.cpp's converter writes them (convert_hf_to_gguf.py
// get_vocab_base / _set_vocab_gpt2, and convert-llama2c-to-ggml for SentencePiece vocabularies):
// the key types are the ones llama_vocab::load reads (u32 ids, bool flags, i32 token types).
#include <map>

#include "qs/error.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/tokenizer.h"

#include "tokenizer_gguf_pre.h"

namespace qs::model {
namespace {

using io::GgufValue;
using nlohmann::json;

std::vector<std::string> mergeStrings(const json& merges, const std::string& source) {
    std::vector<std::string> out;
    if (!merges.is_array()) throw Error(source + ": model.merges is not an array");
    for (const json& m : merges) {
        if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
            out.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
        else if (m.is_string())
            out.push_back(m.get<std::string>());
        else
            throw Error(source + ": model.merges holds " + m.dump() + ", which is not a merge");
    }
    return out;
}

void putSpecialIds(io::GgufMetadata& m, const Tokenizer& t) {
    if (const auto bos = t.bosId())
        m.set("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<std::uint32_t>(*bos)));
    if (const auto eos = t.eosId())
        m.set("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<std::uint32_t>(*eos)));
    m.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(t.addsBosByDefault()));
    m.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
}

}  // namespace

io::GgufMetadata ggufTokenizerFromJson(const json& tokenizer, const json& config, std::int64_t vocabSize,
                                       const std::string& sourceName) {
    const json& model = tokenizer.value("model", json::object());
    if (model.value("type", "BPE") != "BPE" || !model.contains("vocab") || !model["vocab"].is_object())
        throw Error(sourceName + ": only BPE tokenizers can be stored in GGUF by QuantScope");
    const auto pre = ggufPreTokenizerOfJson(tokenizer.value("pre_tokenizer", json()));
    const json normalizer = tokenizer.value("normalizer", json());
    if (!pre || (!normalizer.is_null() && normalizer != pre->normalizer))
        throw Error(
            sourceName +
            ": the pre-tokenizer and normalizer are not a byte-level BPE llama.cpp knows (GPT-2, Qwen2/3, Llama-3)");
    // Parsing it checks it and gives BOS/EOS and add_bos exactly as QuantScope tokenizes with it.
    const Tokenizer parsed = Tokenizer::fromJson(tokenizer.dump(), config.is_null() ? "" : config.dump(), sourceName);

    std::map<std::int64_t, std::pair<std::string, std::int32_t>> byId;  // id -> token, GGUF token type
    for (const auto& [token, id] : model["vocab"].items()) byId[id.get<std::int64_t>()] = {token, 1};
    for (const json& added : tokenizer.value("added_tokens", json::array()))
        byId[added.at("id").get<std::int64_t>()] = {added.at("content").get<std::string>(),
                                                    added.value("special", false) ? 3 : 4};
    if (!byId.empty() && (byId.begin()->first < 0 || byId.rbegin()->first >= vocabSize))
        throw Error(sourceName + ": token ids reach " + std::to_string(byId.rbegin()->first) +
                    " but the embedding has " + std::to_string(vocabSize) + " rows");
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
    for (std::int64_t id = 0; id < vocabSize; ++id) {
        const auto it = byId.find(id);
        tokens.push_back(it == byId.end() ? "[PAD" + std::to_string(id) + "]" : it->second.first);
        types.push_back(it == byId.end() ? 5 : it->second.second);  // 5: unused
    }
    io::GgufMetadata m;
    m.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
    m.set("tokenizer.ggml.pre", GgufValue::string(std::string(pre->name)));
    m.set("tokenizer.ggml.tokens", GgufValue::strings(std::move(tokens)));
    m.set("tokenizer.ggml.token_type", GgufValue::i32s(types));
    m.set("tokenizer.ggml.merges", GgufValue::strings(mergeStrings(model.value("merges", json::array()), sourceName)));
    putSpecialIds(m, parsed);
    return m;
}

io::GgufMetadata ggufTokenizerFromSentencePiece(const std::vector<SentencePiece>& pieces, std::optional<TokenId> bosId,
                                                std::optional<TokenId> eosId, bool addBos) {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<std::int32_t> types;
    std::optional<TokenId> unk;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        tokens.push_back(pieces[i].text);
        scores.push_back(pieces[i].score);
        types.push_back(static_cast<std::int32_t>(pieces[i].type));
        if (pieces[i].type == PieceType::Unknown && !unk) unk = static_cast<TokenId>(i);
    }
    io::GgufMetadata m;
    m.set("tokenizer.ggml.model", GgufValue::string("llama"));
    m.set("tokenizer.ggml.pre", GgufValue::string("default"));
    m.set("tokenizer.ggml.tokens", GgufValue::strings(std::move(tokens)));
    m.set("tokenizer.ggml.scores", GgufValue::f32s(scores));
    m.set("tokenizer.ggml.token_type", GgufValue::i32s(types));
    if (bosId) m.set("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<std::uint32_t>(*bosId)));
    if (eosId) m.set("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<std::uint32_t>(*eosId)));
    if (unk) m.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(static_cast<std::uint32_t>(*unk)));
    m.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(addBos));
    m.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
    return m;
}

}  // namespace qs::model
