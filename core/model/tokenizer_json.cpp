// Tokenizer::fromFile / fromJson: Hugging Face tokenizer.json (+ tokenizer_config.json).
#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/json_file.h"
#include "qs/model/tokenizer.h"

#include "tokenizer_impl.h"

namespace qs::model {
namespace {

using nlohmann::json;

const json& member(const json& object, const char* key) {
    static const json null;
    const auto it = object.find(key);
    return it == object.end() ? null : *it;
}

MergeList parseMerges(const json& merges, const std::string& sourceName) {
    MergeList list;
    list.reserve(merges.size());
    for (const json& merge : merges) {
        if (merge.is_array() && merge.size() == 2) {
            // Newer files (tokenizers >= 0.20, e.g. Qwen3) store ["a", "b"].
            list.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
            continue;
        }
        const std::string line = merge.get<std::string>();
        const std::size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
            throw Error(sourceName + ": merge '" + line + "' is not two tokens separated by a space");
        list.emplace_back(line.substr(0, space), line.substr(space + 1));
    }
    return list;
}

BpeModel parseModel(const json& model, const std::string& sourceName) {
    const std::string type = model.value("type", "BPE");
    if (type != "BPE") throw Error(sourceName + ": tokenizer model '" + type + "' is not supported (only BPE)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const json& affix = member(model, key);
        if (affix.is_string() && !affix.get<std::string>().empty())
            throw Error(sourceName + ": BPE " + key + " is not supported");
    }
    Vocabulary vocab;
    const json& entries = model.at("vocab");
    vocab.reserve(entries.size());
    for (const auto& [token, id] : entries.items())
        vocab.emplace(token, jsonTokenId(id, sourceName + ": model.vocab['" + token + "']"));

    BpeOptions options;
    if (const json& unk = member(model, "unk_token"); unk.is_string()) options.unkToken = unk.get<std::string>();
    options.byteFallback = member(model, "byte_fallback").is_boolean() && model.at("byte_fallback").get<bool>();
    options.fuseUnk = member(model, "fuse_unk").is_boolean() && model.at("fuse_unk").get<bool>();
    options.ignoreMerges = member(model, "ignore_merges").is_boolean() && model.at("ignore_merges").get<bool>();
    // "dropout" only matters for training-time sampling; encoding here is always deterministic.
    return BpeModel(std::move(vocab), parseMerges(model.at("merges"), sourceName), std::move(options), sourceName);
}

void addAddedTokens(Tokenizer::Impl& impl, const json& tokens) {
    if (!tokens.is_array()) return;
    for (const json& t : tokens) {
        impl.added.add({t.at("content").get<std::string>(),
                        jsonTokenId(t.at("id"), impl.sourceName + ": added_tokens id"), t.value("special", false),
                        t.value("lstrip", false), t.value("rstrip", false), t.value("single_word", false),
                        t.value("normalized", false)});
    }
}

// bos_token / eos_token of tokenizer_config.json: a string, {"content": ...}, or null.
std::optional<TokenId> configToken(const json& value, const Tokenizer::Impl& impl, const std::string& sourceName) {
    std::string content;
    if (value.is_string())
        content = value.get<std::string>();
    else if (value.is_object() && value.contains("content"))
        content = value.at("content").get<std::string>();
    else
        return std::nullopt;
    if (const AddedToken* added = impl.added.byContent(content)) return added->id;
    const auto& vocab = impl.model.vocabulary();
    if (const auto it = vocab.find(content); it != vocab.end()) return it->second;
    throw Error(sourceName + ": tokenizer_config.json names token '" + content + "', which is not in the vocabulary");
}

// A TemplateProcessing post-processor whose single-sequence template starts with a special token
// (Llama: "<s> $A") means BOS is added by default; it also tells BOS when the config does not.
void applyPostProcessor(Tokenizer::Impl& impl, const json& post) {
    if (!post.is_object()) return;
    if (post.value("type", "") == "Sequence") {
        for (const json& inner : member(post, "processors")) applyPostProcessor(impl, inner);
        return;
    }
    if (post.value("type", "") != "TemplateProcessing") return;
    const json& single = member(post, "single");
    if (!single.is_array() || single.empty() || !single[0].contains("SpecialToken")) return;
    const std::string name = single[0].at("SpecialToken").at("id").get<std::string>();
    const json& ids = member(member(member(post, "special_tokens"), name.c_str()), "ids");
    if (!ids.is_array() || ids.empty()) return;
    impl.addBos = true;
    if (!impl.bos) impl.bos = jsonTokenId(ids[0], impl.sourceName + ": post_processor special token id");
}

void applyConfig(Tokenizer::Impl& impl, std::string_view configJson, const std::string& sourceName) {
    if (configJson.empty()) return;
    const json config = io::parseJson(configJson, sourceName + " (tokenizer_config.json)");
    if (config.contains("bos_token")) impl.bos = configToken(config.at("bos_token"), impl, sourceName);
    if (config.contains("eos_token")) impl.eos = configToken(config.at("eos_token"), impl, sourceName);
    if (const json& add = member(config, "add_bos_token"); add.is_boolean()) impl.addBos = add.get<bool>();
}

}  // namespace

Tokenizer Tokenizer::fromJson(std::string_view tokenizerJson, std::string_view tokenizerConfigJson,
                              const std::string& sourceName) {
    try {
        const json root = io::parseJson(tokenizerJson, sourceName, {.maxBytes = io::kMaxTokenizerJsonBytes});
        auto impl = std::make_unique<Impl>(sourceName, parseModel(root.at("model"), sourceName));
        addAddedTokens(*impl, member(root, "added_tokens"));
        impl->normalizer = Normalizer::fromJson(member(root, "normalizer"), sourceName);
        impl->preTokenizer = PreTokenizer::fromJson(member(root, "pre_tokenizer"), sourceName);
        impl->decoder = Decoder::fromJson(member(root, "decoder"), sourceName);
        // The config's explicit add_bos_token, read last, overrides what the template implies.
        applyPostProcessor(*impl, member(root, "post_processor"));
        applyConfig(*impl, tokenizerConfigJson, sourceName);
        return Tokenizer(std::move(impl));
    } catch (const json::exception& e) {
        throw Error(sourceName + ": invalid tokenizer JSON: " + io::jsonErrorText(e));
    }
}

Tokenizer Tokenizer::fromFile(const std::filesystem::path& path) {
    const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "tokenizer.json" : path;
    const std::filesystem::path config = file.parent_path() / "tokenizer_config.json";
    const std::string configText = std::filesystem::exists(config) ? readTokenizerFile(config) : std::string();
    return fromJson(readTokenizerFile(file), configText, file.string());
}

}  // namespace qs::model
