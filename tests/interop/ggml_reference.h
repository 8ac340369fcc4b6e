#pragma once
// Test-only: llama.cpp's ggml (the libggml-base.so that the npm package node-llama-cpp ships) as an
// independent judge of QuantScope's ggml block codecs. The library is dlopen'ed at run time from
// QS_GGML_LIBRARY (set by CMake; the environment variable of the same name overrides it) and is never
// linked into the product. Its functions are called by their exported names, with the signatures of
// ggml/src/ggml-quants.h: dequantize_row_<type>, quantize_row_<type>_ref and quantize_<type>.
#include <cstdint>
#include <string>

#include "qs/io/ggml_type.h"

namespace qs::interop {

class GgmlReference {
public:
    // The process-wide instance; loads the library on first use.
    static const GgmlReference& get();

    // Whether the library loaded; error() says why not and how to install it.
    bool loaded() const { return handle_ != nullptr; }
    const std::string& error() const { return error_; }
    std::string path() const;

    // ggml's dequantize_row_<type>; false when the library has no such function.
    bool dequantizeRow(io::GgmlType type, const std::uint8_t* src, float* dst, std::int64_t n) const;
    // ggml's quantize_row_<type>_ref (the deterministic reference quantizer, no importance).
    bool quantizeRowRef(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t n) const;
    // ggml's quantize_<type> over nrows rows of nPerRow (importance: nPerRow weights or null), after
    // ggml_quantize_init(type) as llama.cpp's quantizer calls it.
    bool quantize(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t nrows, std::int64_t nPerRow,
                  const float* importance) const;

    GgmlReference(const GgmlReference&) = delete;
    GgmlReference& operator=(const GgmlReference&) = delete;

private:
    GgmlReference();
    void* symbol(const std::string& name) const;

    void* handle_ = nullptr;
    std::string error_;
};

// The install hint printed when the library is missing.
inline constexpr const char* kGgmlInstallHint =
    "install it with: cd tests/interop && npm ci --omit=optional --ignore-scripts --no-audit --no-fund "
    "(scripts/test.sh does this; CI always has it)";

}  // namespace qs::interop
