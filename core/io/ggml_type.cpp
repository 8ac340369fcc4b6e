// The table of ggml's types: number, name, block layout (the sizes of ggml-common.h's block_*
// structs) and the row decoder QuantScope has for each.
#include "qs/io/ggml_type.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "qs/error.h"

#include "ggml_decoders.h"

namespace qs::io {
namespace {

struct Entry {
    GgmlTypeTraits traits;
    ggml::DecodeRow decode;
};

constexpr int kQk = 256;  // QK_K: the super-block of the K-quants and the IQ types

Entry entry(GgmlType type, std::string_view name, int elements, int bytes, bool isFloat = false,
            ggml::DecodeRow decode = nullptr) {
    return {{type, name, elements, bytes, isFloat, decode != nullptr}, decode};
}

const std::vector<Entry>& table() {
    using T = GgmlType;
    static const std::vector<Entry> entries = {
        entry(T::F32, "f32", 1, 4, true, ggml::decodeF32),
        entry(T::F16, "f16", 1, 2, true, ggml::decodeF16),
        entry(T::BF16, "bf16", 1, 2, true, ggml::decodeBf16),
        entry(T::F64, "f64", 1, 8, true),
        entry(T::I8, "i8", 1, 1),
        entry(T::I16, "i16", 1, 2),
        entry(T::I32, "i32", 1, 4),
        entry(T::I64, "i64", 1, 8),
        entry(T::Q4_0, "q4_0", 32, 2 + 16, false, ggml::decodeQ4_0),
        entry(T::Q4_1, "q4_1", 32, 4 + 16, false, ggml::decodeQ4_1),
        entry(T::Q5_0, "q5_0", 32, 2 + 4 + 16, false, ggml::decodeQ5_0),
        entry(T::Q5_1, "q5_1", 32, 4 + 4 + 16, false, ggml::decodeQ5_1),
        entry(T::Q8_0, "q8_0", 32, 2 + 32, false, ggml::decodeQ8_0),
        entry(T::Q8_1, "q8_1", 32, 4 + 32),
        entry(T::Q2_K, "q2_K", kQk, 4 + kQk / 16 + kQk / 4, false, ggml::decodeQ2_K),
        entry(T::Q3_K, "q3_K", kQk, 2 + kQk / 4 + kQk / 8 + 12, false, ggml::decodeQ3_K),
        entry(T::Q4_K, "q4_K", kQk, 4 + 12 + kQk / 2, false, ggml::decodeQ4_K),
        entry(T::Q5_K, "q5_K", kQk, 4 + 12 + kQk / 2 + kQk / 8, false, ggml::decodeQ5_K),
        entry(T::Q6_K, "q6_K", kQk, 2 + kQk / 16 + 3 * kQk / 4, false, ggml::decodeQ6_K),
        entry(T::Q8_K, "q8_K", kQk, 4 + kQk + kQk / 16 * 2),
        entry(T::IQ2_XXS, "iq2_xxs", kQk, 2 + kQk / 8 * 2, false, ggml::decodeIq2Xxs),
        entry(T::IQ2_XS, "iq2_xs", kQk, 2 + kQk / 8 * 2 + kQk / 32, false, ggml::decodeIq2Xs),
        entry(T::IQ2_S, "iq2_s", kQk, 2 + kQk / 4 + kQk / 16, false, ggml::decodeIq2S),
        entry(T::IQ3_XXS, "iq3_xxs", kQk, 2 + 3 * (kQk / 8), false, ggml::decodeIq3Xxs),
        entry(T::IQ3_S, "iq3_s", kQk, 2 + 13 * (kQk / 32) + kQk / 64, false, ggml::decodeIq3S),
        entry(T::IQ1_S, "iq1_s", kQk, 2 + kQk / 8 + kQk / 16, false, ggml::decodeIq1S),
        entry(T::IQ1_M, "iq1_m", kQk, kQk / 8 + kQk / 16 + kQk / 32, false, ggml::decodeIq1M),
        entry(T::IQ4_NL, "iq4_nl", 32, 2 + 16, false, ggml::decodeIq4Nl),
        entry(T::IQ4_XS, "iq4_xs", kQk, 2 + 2 + kQk / 64 + kQk / 2, false, ggml::decodeIq4Xs),
        entry(T::TQ1_0, "tq1_0", kQk, 2 + kQk / 64 + (kQk - 4 * kQk / 64) / 5, false, ggml::decodeTq1_0),
        entry(T::TQ2_0, "tq2_0", kQk, 2 + kQk / 4, false, ggml::decodeTq2_0),
        entry(T::MXFP4, "mxfp4", 32, 1 + 16, false, ggml::decodeMxfp4),
        entry(T::NVFP4, "nvfp4", 64, 64 / 16 + 32, false, ggml::decodeNvfp4),
        entry(T::Q1_0, "q1_0", 128, 2 + 128 / 8, false, ggml::decodeQ1_0),
        entry(T::Q2_0, "q2_0", 64, 2 + 64 / 4, false, ggml::decodeQ2_0),
    };
    return entries;
}

const Entry* find(std::uint32_t type) {
    const auto& entries = table();
    const auto it = std::find_if(entries.begin(), entries.end(),
                                 [&](const Entry& e) { return static_cast<std::uint32_t>(e.traits.type) == type; });
    return it == entries.end() ? nullptr : &*it;
}

const Entry& require(GgmlType type) {
    const Entry* e = find(static_cast<std::uint32_t>(type));
    if (!e) throw Error("ggml type " + std::to_string(static_cast<std::uint32_t>(type)) + " is unknown");
    return *e;
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

}  // namespace

const GgmlTypeTraits* ggmlTypeTraits(std::uint32_t type) {
    const Entry* e = find(type);
    return e ? &e->traits : nullptr;
}

const GgmlTypeTraits& ggmlTypeTraits(GgmlType type) { return require(type).traits; }

const GgmlTypeTraits* ggmlTypeByName(std::string_view name) {
    const std::string wanted = lowercase(name);
    for (const Entry& e : table())
        if (lowercase(e.traits.name) == wanted) return &e.traits;
    return nullptr;
}

std::size_t ggmlRowBytes(GgmlType type, std::int64_t n) {
    const GgmlTypeTraits& t = ggmlTypeTraits(type);
    if (n < 0 || n % t.blockElements != 0)
        throw Error("ggml type " + std::string(t.name) + ": " + std::to_string(n) +
                    " elements are not a whole number of blocks of " + std::to_string(t.blockElements));
    return static_cast<std::size_t>(n / t.blockElements) * static_cast<std::size_t>(t.blockBytes);
}

void ggmlDecodeRow(GgmlType type, const std::uint8_t* src, float* dst, std::int64_t n) {
    const Entry& e = require(type);
    if (!e.decode) throw Error("ggml type " + std::string(e.traits.name) + " cannot be decoded by QuantScope");
    ggmlRowBytes(type, n);  // checks whole blocks
    e.decode(src, dst, n);
}

}  // namespace qs::io
