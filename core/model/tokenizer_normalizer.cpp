#include "tokenizer_normalizer.h"

#include <nlohmann/json.hpp>

#include "qs/error.h"

#ifdef QS_HAVE_ICU
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>
#endif

namespace qs::model {
namespace {

bool isAscii(std::string_view text) {
    for (const char c : text)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

// Unicode normalization forms through ICU. ASCII text is its own normal form in all four, which
// covers most calibration text without a round trip through UTF-16. Without ICU the text is kept
// as it is; that differs from Hugging Face only for text that is not already in the normal form.
std::string unicodeNormalize(std::string_view text, int form) {
    if (isAscii(text)) return std::string(text);
#ifdef QS_HAVE_ICU
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* normalizer = nullptr;
    switch (form) {
        case 0: normalizer = icu::Normalizer2::getNFCInstance(status); break;
        case 1: normalizer = icu::Normalizer2::getNFDInstance(status); break;
        case 2: normalizer = icu::Normalizer2::getNFKCInstance(status); break;
        default: normalizer = icu::Normalizer2::getNFKDInstance(status); break;
    }
    if (U_FAILURE(status)) throw Error("tokenizer: ICU normalizer unavailable");
    const icu::UnicodeString source =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    if (normalizer->isNormalized(source, status) && U_SUCCESS(status)) return std::string(text);
    status = U_ZERO_ERROR;
    const icu::UnicodeString normalized = normalizer->normalize(source, status);
    if (U_FAILURE(status)) throw Error("tokenizer: Unicode normalization failed");
    std::string out;
    normalized.toUTF8String(out);
    return out;
#else
    (void)form;
    return std::string(text);
#endif
}

}  // namespace

std::string replaceAll(std::string_view text, const Regex& regex, std::string_view content) {
    std::string out;
    out.reserve(text.size());
    std::size_t last = 0;
    for (const Span& m : regex.findAll(text)) {
        out.append(text.substr(last, m.begin - last));
        out.append(content);
        last = m.end;
    }
    out.append(text.substr(last));
    return out;
}

Normalizer Normalizer::fromJson(const nlohmann::json& spec, const std::string& sourceName) {
    Normalizer normalizer;
    if (!spec.is_null()) normalizer.addJson(spec, sourceName);
    return normalizer;
}

void Normalizer::addPrepend(std::string text) { steps_.push_back({Kind::Prepend, std::move(text), std::nullopt}); }

void Normalizer::addReplace(const std::string& literal, std::string content, const std::string& sourceName) {
    steps_.push_back({Kind::Replace, std::move(content), Regex(literal, Regex::Syntax::Literal, sourceName)});
}

void Normalizer::addJson(const nlohmann::json& spec, const std::string& sourceName) {
    const std::string type = spec.value("type", "");
    if (type == "Sequence") {
        for (const auto& inner : spec.at("normalizers")) addJson(inner, sourceName);
    } else if (type == "NFC") {
        steps_.push_back({Kind::Nfc, {}, std::nullopt});
    } else if (type == "NFD") {
        steps_.push_back({Kind::Nfd, {}, std::nullopt});
    } else if (type == "NFKC") {
        steps_.push_back({Kind::Nfkc, {}, std::nullopt});
    } else if (type == "NFKD") {
        steps_.push_back({Kind::Nfkd, {}, std::nullopt});
    } else if (type == "Prepend") {
        addPrepend(spec.at("prepend").get<std::string>());
    } else if (type == "Replace") {
        const auto& pattern = spec.at("pattern");
        const bool literal = pattern.contains("String");
        const std::string text =
            literal ? pattern.at("String").get<std::string>() : pattern.at("Regex").get<std::string>();
        steps_.push_back({Kind::Replace, spec.at("content").get<std::string>(),
                          Regex(text, literal ? Regex::Syntax::Literal : Regex::Syntax::Pattern, sourceName)});
    } else {
        throw Error(sourceName + ": normalizer type '" + type + "' is not supported");
    }
}

std::string Normalizer::apply(std::string_view text) const {
    std::string current(text);
    for (const Step& step : steps_) {
        switch (step.kind) {
            case Kind::Nfc: current = unicodeNormalize(current, 0); break;
            case Kind::Nfd: current = unicodeNormalize(current, 1); break;
            case Kind::Nfkc: current = unicodeNormalize(current, 2); break;
            case Kind::Nfkd: current = unicodeNormalize(current, 3); break;
            case Kind::Prepend:
                // Hugging Face leaves empty text empty, so "" never becomes a lone "▁".
                if (!current.empty()) current.insert(0, step.text);
                break;
            case Kind::Replace: current = replaceAll(current, *step.regex, step.text); break;
        }
    }
    return current;
}

}  // namespace qs::model
