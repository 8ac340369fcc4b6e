#pragma once
// What the FP4 writers share (NVFP4 of compressed-tensors and ModelOpt, MXFP4 of compressed-tensors;
// docs/formats/): the checks a QuantizedLinear of E2M1 codes must pass and the packed codes,
// two per byte with the EVEN element in the LOW nibble, [rows, cols / 2].
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qs/quant/quantized_linear.h"

namespace qs::formats::detail {

struct Fp4Layout {
    quant::Method method;        // Nvfp4 or Mxfp4
    int blockSize;               // inputs per scale: 16 or 32
    std::string_view scaleKind;  // "E4M3" or "E8M0": what each stored scale must be exactly
};

inline constexpr Fp4Layout kNvfp4Layout{quant::Method::Nvfp4, 16, "E4M3"};
inline constexpr Fp4Layout kMxfp4Layout{quant::Method::Mxfp4, 32, "E8M0"};

// "" when q is a result of layout.method with whole blocks of layout.blockSize inputs per row and
// scales the layout's scale type holds exactly; else why not, in words.
std::string fp4Refusal(const quant::QuantizedLinear& q, const Fp4Layout& layout);

std::vector<std::uint8_t> packE2m1Codes(const quant::QuantizedLinear& q);   // even element low nibble
std::vector<std::uint8_t> e4m3ScaleBytes(const quant::QuantizedLinear& q);  // q.scales row-major, exact
std::vector<std::uint8_t> e8m0ScaleBytes(const quant::QuantizedLinear& q);  // q.scales row-major, exact

}  // namespace qs::formats::detail
