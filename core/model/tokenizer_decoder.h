#pragma once
// The "decoder" of tokenizer.json: turns token strings back into text (byte-level alphabet back to
// bytes; "▁" back to spaces and <0xNN> back to bytes for SentencePiece-style vocabularies).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace qs::model {

class Decoder {
public:
    Decoder() = default;  // token strings are concatenated as they are
    // `spec` is the "decoder" value (possibly null); throws qs::Error for kinds not supported.
    static Decoder fromJson(const nlohmann::json& spec, const std::string& sourceName);
    // The decoder of a SentencePiece BPE tokenizer: ▁ -> space, byte fallback, drop the leading space.
    static Decoder sentencePiece();
    static Decoder byteLevel();

    std::string decode(std::vector<std::string> tokens) const;

private:
    enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace };
    struct Step {
        Kind kind;
        std::string pattern;           // Replace: literal to replace; Strip, Metaspace: the character
        std::string content;           // Replace: replacement
        std::size_t start = 0;         // Strip: characters to drop at the start
        std::size_t stop = 0;          // Strip: characters to drop at the end
        bool stripFirstSpace = false;  // Metaspace: its prepend scheme added a space to drop
    };
    void addJson(const nlohmann::json& spec, const std::string& sourceName);
    static void apply(const Step& step, std::vector<std::string>& tokens);

    std::vector<Step> steps_;
};

}  // namespace qs::model
