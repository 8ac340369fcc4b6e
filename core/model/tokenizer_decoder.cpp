#include "tokenizer_decoder.h"

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/json_value.h"

#include "tokenizer_byte_level.h"

namespace qs::model {
namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581 "▁"

void replaceInPlace(std::string& text, const std::string& pattern, const std::string& content) {
    if (pattern.empty()) return;
    std::size_t at = text.find(pattern);
    while (at != std::string::npos) {
        text.replace(at, pattern.size(), content);
        at = text.find(pattern, at + content.size());
    }
}

// "<0x41>" -> 0x41; -1 for any other token.
int byteToken(const std::string& token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>') return -1;
    int value = 0;
    for (std::size_t i = 3; i < 5; ++i) {
        const char c = token[i];
        const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

}  // namespace

Decoder Decoder::fromJson(const nlohmann::json& spec, const std::string& sourceName) {
    Decoder decoder;
    if (!spec.is_null()) decoder.addJson(spec, sourceName);
    return decoder;
}

Decoder Decoder::sentencePiece() {
    Decoder decoder;
    decoder.steps_.push_back({Kind::Replace, kMetaspace, " "});
    decoder.steps_.push_back({Kind::ByteFallback, {}, {}});
    decoder.steps_.push_back({Kind::Fuse, {}, {}});
    decoder.steps_.push_back({Kind::Strip, " ", {}, 1, 0});
    return decoder;
}

Decoder Decoder::byteLevel() {
    Decoder decoder;
    decoder.steps_.push_back({Kind::ByteLevel, {}, {}});
    return decoder;
}

void Decoder::addJson(const nlohmann::json& spec, const std::string& sourceName) {
    const std::string type = spec.value("type", "");
    if (type == "Sequence") {
        for (const auto& inner : spec.at("decoders")) addJson(inner, sourceName);
    } else if (type == "ByteLevel") {
        steps_.push_back({Kind::ByteLevel, {}, {}});
    } else if (type == "Replace") {
        const auto& pattern = spec.at("pattern");
        if (!pattern.contains("String"))
            throw Error(sourceName + ": decoder Replace with a regex pattern is not supported");
        steps_.push_back(
            {Kind::Replace, pattern.at("String").get<std::string>(), spec.at("content").get<std::string>()});
    } else if (type == "ByteFallback") {
        steps_.push_back({Kind::ByteFallback, {}, {}});
    } else if (type == "Fuse") {
        steps_.push_back({Kind::Fuse, {}, {}});
    } else if (type == "Strip") {
        const auto count = [&](const char* key) {
            return static_cast<std::size_t>(
                io::jsonIntegerField(spec, key, sourceName + ": decoder Strip", {0, 1 << 20}).value_or(0));
        };
        steps_.push_back({Kind::Strip, spec.at("content").get<std::string>(), {}, count("start"), count("stop")});
    } else if (type == "Metaspace") {
        Step step{Kind::Metaspace, spec.value("replacement", kMetaspace), {}};
        const std::string scheme = spec.value("prepend_scheme", std::string());
        step.stripFirstSpace = scheme.empty() ? spec.value("add_prefix_space", true) : scheme != "never";
        steps_.push_back(std::move(step));
    } else {
        throw Error(sourceName + ": decoder type '" + type + "' is not supported");
    }
}

void Decoder::apply(const Step& step, std::vector<std::string>& tokens) {
    switch (step.kind) {
        case Kind::ByteLevel:
            for (std::string& token : tokens) {
                std::string bytes;
                // Tokens outside the alphabet (some added tokens) stay as written.
                if (byte_level::decode(token, bytes)) token = std::move(bytes);
            }
            break;
        case Kind::Replace:
            for (std::string& token : tokens) replaceInPlace(token, step.pattern, step.content);
            break;
        case Kind::ByteFallback:
            // The raw byte is kept even when it is part of a character split over several tokens, so
            // that concatenated pieces rebuild the text (Hugging Face would show U+FFFD per piece).
            for (std::string& token : tokens)
                if (const int byte = byteToken(token); byte >= 0) token.assign(1, static_cast<char>(byte));
            break;
        case Kind::Fuse: {
            std::string all;
            for (const std::string& token : tokens) all += token;
            tokens.assign(1, std::move(all));
            break;
        }
        case Kind::Strip:
            for (std::string& token : tokens) {
                std::size_t begin = 0;
                for (std::size_t k = 0; k < step.start && token.compare(begin, step.pattern.size(), step.pattern) == 0;
                     ++k)
                    begin += step.pattern.size();
                std::size_t end = token.size();
                for (std::size_t k = 0;
                     k < step.stop && end >= begin + step.pattern.size() &&
                     token.compare(end - step.pattern.size(), step.pattern.size(), step.pattern) == 0;
                     ++k)
                    end -= step.pattern.size();
                token = token.substr(begin, end - begin);
            }
            break;
        case Kind::Metaspace:
            for (std::size_t i = 0; i < tokens.size(); ++i) {
                replaceInPlace(tokens[i], step.pattern, " ");
                // Only the space the pre-tokenizer prepended goes, so decode(encode(" x")) keeps its space.
                if (i == 0 && step.stripFirstSpace && tokens[i].starts_with(' ')) tokens[i].erase(0, 1);
            }
            break;
    }
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
    for (const Step& step : steps_) apply(step, tokens);
    std::string text;
    for (const std::string& token : tokens) text += token;
    return text;
}

}  // namespace qs::model
