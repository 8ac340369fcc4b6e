#include "tokenizer_pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include "qs/error.h"

#include "tokenizer_byte_level.h"
#include "tokenizer_normalizer.h"

namespace qs::model {
namespace {

SplitBehavior parseBehavior(const std::string& name, const std::string& sourceName) {
    if (name == "Removed") return SplitBehavior::Removed;
    if (name == "Isolated") return SplitBehavior::Isolated;
    if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (name == "Contiguous") return SplitBehavior::Contiguous;
    throw Error(sourceName + ": split behavior '" + name + "' is not supported");
}

PrependScheme parsePrependScheme(const nlohmann::json& spec) {
    // Older files only have add_prefix_space (true meant "always").
    if (spec.contains("prepend_scheme")) {
        const std::string scheme = spec.at("prepend_scheme").get<std::string>();
        if (scheme == "first") return PrependScheme::First;
        if (scheme == "never") return PrependScheme::Never;
        return PrependScheme::Always;
    }
    return spec.value("add_prefix_space", true) ? PrependScheme::Always : PrependScheme::Never;
}

struct Piece {
    Span span;
    bool delimiter;
};

// Cuts `text` into alternating stretches of delimiters (regex matches, or the gaps when inverted)
// and content, covering every byte.
std::vector<Piece> cutAtMatches(std::string_view text, const Regex& regex, bool invert) {
    std::vector<Piece> pieces;
    std::size_t last = 0;
    for (const Span& m : regex.findAll(text)) {
        if (m.begin > last) pieces.push_back({{last, m.begin}, invert});
        pieces.push_back({m, !invert});
        last = m.end;
    }
    if (last < text.size()) pieces.push_back({{last, text.size()}, invert});
    return pieces;
}

// Hugging Face's SplitDelimiterBehavior applied to the pieces of one word.
std::vector<Span> combine(const std::vector<Piece>& pieces, SplitBehavior behavior) {
    std::vector<Span> out;
    bool glueNext = false;  // MergedWithNext: the previous delimiter waits for the next piece
    for (const Piece& p : pieces) {
        switch (behavior) {
            case SplitBehavior::Removed:
                if (!p.delimiter) out.push_back(p.span);
                break;
            case SplitBehavior::Isolated: out.push_back(p.span); break;
            case SplitBehavior::MergedWithPrevious:
                if (p.delimiter && !out.empty())
                    out.back().end = p.span.end;
                else
                    out.push_back(p.span);
                break;
            case SplitBehavior::MergedWithNext:
                if (glueNext)
                    out.back().end = p.span.end;
                else
                    out.push_back(p.span);
                glueNext = p.delimiter;
                break;
            case SplitBehavior::Contiguous:
                if (p.delimiter && glueNext)
                    out.back().end = p.span.end;
                else
                    out.push_back(p.span);
                glueNext = p.delimiter;
                break;
        }
    }
    return out;
}

}  // namespace

PreTokenizer PreTokenizer::fromJson(const nlohmann::json& spec, const std::string& sourceName) {
    PreTokenizer preTokenizer;
    if (!spec.is_null()) preTokenizer.addJson(spec, sourceName);
    return preTokenizer;
}

void PreTokenizer::addSplit(Regex regex, SplitBehavior behavior, bool invert) {
    Step step;
    step.regex = std::move(regex);
    step.behavior = behavior;
    step.invert = invert;
    steps_.push_back(std::move(step));
}

void PreTokenizer::addByteLevel(bool addPrefixSpace, bool useRegex, const std::string& sourceName) {
    Step step;
    step.kind = Kind::ByteLevel;
    if (useRegex) step.regex.emplace(kGpt2SplitPattern, Regex::Syntax::Pattern, sourceName);
    step.addPrefixSpace = addPrefixSpace;
    steps_.push_back(std::move(step));
}

void PreTokenizer::addJson(const nlohmann::json& spec, const std::string& sourceName) {
    const std::string type = spec.value("type", "");
    if (type == "Sequence") {
        for (const auto& inner : spec.at("pretokenizers")) addJson(inner, sourceName);
    } else if (type == "Split") {
        const auto& pattern = spec.at("pattern");
        const bool literal = pattern.contains("String");
        const std::string text =
            literal ? pattern.at("String").get<std::string>() : pattern.at("Regex").get<std::string>();
        addSplit(Regex(text, literal ? Regex::Syntax::Literal : Regex::Syntax::Pattern, sourceName),
                 parseBehavior(spec.at("behavior").get<std::string>(), sourceName), spec.value("invert", false));
    } else if (type == "ByteLevel") {
        addByteLevel(spec.value("add_prefix_space", false), spec.value("use_regex", true), sourceName);
    } else if (type == "Metaspace") {
        Step step;
        step.kind = Kind::Metaspace;
        step.replacement = spec.value("replacement", std::string("\xE2\x96\x81"));
        step.prependScheme = parsePrependScheme(spec);
        step.splitOnReplacement = spec.value("split", true);
        steps_.push_back(std::move(step));
    } else if (type == "Digits") {
        const char* pattern = spec.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)";
        addSplit(Regex(pattern, Regex::Syntax::Pattern, sourceName), SplitBehavior::Isolated, false);
    } else if (type == "Whitespace") {
        addSplit(Regex(R"(\w+|[^\w\s]+)", Regex::Syntax::Pattern, sourceName), SplitBehavior::Removed, true);
    } else if (type == "WhitespaceSplit") {
        addSplit(Regex(R"(\s+)", Regex::Syntax::Pattern, sourceName), SplitBehavior::Removed, false);
    } else {
        throw Error(sourceName + ": pre_tokenizer type '" + type + "' is not supported");
    }
}

void PreTokenizer::applySplit(const Step& step, std::vector<std::string>& words) {
    std::vector<std::string> out;
    out.reserve(words.size());
    for (const std::string& word : words) {
        for (const Span& s : combine(cutAtMatches(word, *step.regex, step.invert), step.behavior))
            out.emplace_back(word, s.begin, s.end - s.begin);
    }
    words = std::move(out);
}

void PreTokenizer::applyByteLevel(const Step& step, std::vector<std::string>& words) {
    if (step.addPrefixSpace)
        for (std::string& word : words)
            if (!word.starts_with(' ')) word.insert(0, 1, ' ');
    if (step.regex) applySplit(step, words);
    for (std::string& word : words) word = byte_level::encode(word);
}

void PreTokenizer::applyMetaspace(const Step& step, std::vector<std::string>& words, bool atInputStart) {
    static const Regex space(" ", Regex::Syntax::Literal, "metaspace");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < words.size(); ++i) {
        std::string word = replaceAll(words[i], space, step.replacement);
        const bool prepend = step.prependScheme == PrependScheme::Always ||
                             (step.prependScheme == PrependScheme::First && atInputStart && i == 0);
        if (prepend && !word.starts_with(step.replacement)) word.insert(0, step.replacement);
        if (!step.splitOnReplacement) {
            out.push_back(std::move(word));
            continue;
        }
        // Each "▁" starts a new word (MergedWithNext on the replacement).
        std::size_t start = 0;
        std::size_t at = word.find(step.replacement, 1);
        while (at != std::string::npos) {
            if (at > start) out.emplace_back(word, start, at - start);
            start = at;
            at = word.find(step.replacement, at + step.replacement.size());
        }
        if (start < word.size()) out.emplace_back(word, start);
    }
    words = std::move(out);
}

std::vector<std::string> PreTokenizer::split(std::string_view text, bool atInputStart) const {
    std::vector<std::string> words{std::string(text)};
    for (const Step& step : steps_) {
        switch (step.kind) {
            case Kind::Split: applySplit(step, words); break;
            case Kind::ByteLevel: applyByteLevel(step, words); break;
            case Kind::Metaspace: applyMetaspace(step, words, atInputStart); break;
        }
    }
    return words;
}

}  // namespace qs::model
