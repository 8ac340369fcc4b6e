#pragma once
// ggml's tensor types, numbered as GGUF files store them (ggml.h of llama.cpp): the element types of
// the GGUF container, as DType is of safetensors. Their block layouts, and the row decoder of each
// type QuantScope reads (bit for bit as ggml's dequantize_row_*). The encoders are quantization
// algorithms and live in qs/quant/ggml_encode.h. docs/formats/gguf-types.md describes the blocks.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace qs::io {

enum class GgmlType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
};

struct GgmlTypeTraits {
    GgmlType type;
    std::string_view name;  // ggml's own spelling: "f16", "q4_K", "iq4_xs"
    int blockElements;      // elements per block (1 for the plain types)
    int blockBytes;         // bytes per block
    bool isFloat;           // F32, F16, BF16, F64: stored as plain numbers
    bool decodes;           // ggmlDecodeRow supports it
    double bitsPerWeight() const { return 8.0 * blockBytes / blockElements; }
};

// The type numbered `type`, or nullptr when this version of ggml has no such type (removed and
// unknown numbers included).
const GgmlTypeTraits* ggmlTypeTraits(std::uint32_t type);
const GgmlTypeTraits& ggmlTypeTraits(GgmlType type);

// The type ggml names `name` (case-insensitive: "Q4_K" and "q4_K" both), or nullptr.
const GgmlTypeTraits* ggmlTypeByName(std::string_view name);

// Bytes of n elements of `type`; throws qs::Error when n is not a whole number of blocks.
std::size_t ggmlRowBytes(GgmlType type, std::int64_t n);

// Decodes n elements (whole blocks) of `type` at src into dst, as ggml's dequantize_row_* does
// (bit for bit). Throws qs::Error for a type it does not decode.
void ggmlDecodeRow(GgmlType type, const std::uint8_t* src, float* dst, std::int64_t n);

}  // namespace qs::io
