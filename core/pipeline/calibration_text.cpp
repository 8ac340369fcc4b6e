#include "qs/pipeline/calibration_text.h"

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/json_file.h"
#include "qs/io/regular_file.h"

namespace qs::pipeline {

std::vector<std::string> loadTexts(const std::filesystem::path& path) {
    // A checkpoint's own calibration.txt / eval.txt is read too: a FIFO there must not block.
    constexpr std::uint64_t kMaxTextBytes = 1ull << 30;
    std::string content = io::readRegularFile(path, kMaxTextBytes, "a text file");
    if (path.extension() != ".json") return {std::move(content)};

    const nlohmann::json list = io::parseJson(content, path.string(), {.maxBytes = kMaxTextBytes});
    if (!list.is_array()) throw Error(path.string() + ": expected a JSON list of strings");
    std::vector<std::string> texts;
    for (const auto& item : list) {
        if (!item.is_string())
            throw Error(path.string() + ": expected a JSON list of strings, found a " + item.type_name());
        texts.push_back(item.get<std::string>());
    }
    return texts;
}

TokenSequences tokenWindows(const model::Tokenizer& tokenizer, const std::vector<std::string>& texts, int samples,
                            int seqLen, const std::string& sourceName) {
    if (samples <= 0 || seqLen <= 1) throw Error("need at least one sample of two tokens or more");
    std::vector<model::TokenId> tokens;
    for (const auto& text : texts) {
        const auto ids = tokenizer.encode(text);
        tokens.insert(tokens.end(), ids.begin(), ids.end());
    }
    const std::size_t windows =
        std::min<std::size_t>(static_cast<std::size_t>(samples), tokens.size() / static_cast<std::size_t>(seqLen));
    if (windows == 0)
        throw Error(sourceName + ": " + std::to_string(tokens.size()) + " tokens, fewer than one sequence of " +
                    std::to_string(seqLen));
    TokenSequences out(windows);
    for (std::size_t i = 0; i < windows; ++i) {
        const auto first = tokens.begin() + static_cast<std::ptrdiff_t>(i * static_cast<std::size_t>(seqLen));
        out[i].assign(first, first + seqLen);
    }
    return out;
}

std::size_t tokenCount(const TokenSequences& sequences) {
    std::size_t n = 0;
    for (const auto& s : sequences) n += s.size();
    return n;
}

}  // namespace qs::pipeline
