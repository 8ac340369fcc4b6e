#pragma once
// bitsandbytes NF4 ("4-bit NormalFloat", QLoRA): the row-major flattened weight is cut into blocks
// of `blockSize` (64) values; each block is divided by its absmax and every value rounded to the
// nearest of 16 levels placed at normal quantiles (nf4Table()); ties go to the lower level, as
// bitsandbytes' argmin does. With double quantization (compress_statistics) the f32 absmax values
// are themselves stored in 8 bits: their mean is subtracted (scaleOffset) and the rest quantized
// blockwise (256 absmax per block) with the signed dynamic map of create_dynamic_map(signed=True),
// each block's largest magnitude kept as one f32 (scaleScales).
#include <array>
#include <cstdint>

#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

// The 16 NF4 levels, ascending, -1 .. 1: bitsandbytes' get_4bit_type("nf4") constants.
const std::array<float, 16>& nf4Table();

// bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8), sorted
// ascending: 127 negative levels, 0, 127 positive levels and 1.0 (256 f32 values).
const std::array<float, 256>& dynamicMap8();

struct Nf4Options {
    int blockSize = 64;         // bnb_4bit blocksize (a power of two, 32 .. 4096)
    bool doubleQuant = true;    // bnb_4bit_use_double_quant
    int nestedBlockSize = 256;  // absmax values per 8-bit block
};

// Method Nf4, CodeKind Nf4, codes = NF4 indices [rows * cols], blockRows 1, blockCols = blockSize,
// scales = the absmax each block is decoded with ([rows, cols / blockSize]; the double-quantized
// value when doubleQuant). With doubleQuant, scaleCodes (one byte per block, row-major blocks =
// bitsandbytes' flat order), scaleScales (nested_absmax) and scaleOffset (nested_offset) hold the
// stored form. The columns must be a multiple of blockSize so that bitsandbytes' flat blocks are
// the rows' blocks; other shapes throw qs::Error.
QuantizedLinear quantizeNf4(const MatrixF& w, const Nf4Options& options = {});
MatrixF dequantizeNf4(const QuantizedLinear& q);
void dequantizeNf4(const QuantizedLinear& q, float* out);  // into rows * cols floats, no allocation

// The index of the entry of the ascending table nearest to v, the first one on ties (torch.argmin).
std::uint8_t nearestNf4(float v);       // of nf4Table()
std::uint8_t nearestDynamic8(float v);  // of dynamicMap8(): the double quantization of absmax

}  // namespace qs::quant
