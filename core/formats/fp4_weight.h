#pragma once
// FP4 E2M1 codes packed two per byte with the EVEN element in the LOW nibble (NVFP4 of ModelOpt and
// compressed-tensors, MXFP4 of gpt-oss and compressed-tensors; docs/formats/README.md), one scale per
// block of `blockSize` inputs of a row.
#include <cstdint>

#include "qs/formats/linear_codec.h"

namespace qs::formats::detail {

struct Fp4Blocks {
    const std::uint8_t* packed = nullptr;  // [rows, cols / 2] bytes
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    int blockSize = 16;
    MatrixF storedScales;      // [rows, cols / blockSize]: the parts' scales (without the global scale)
    float globalScale = 1.0f;  // the parts' globalScale, a multiplier (compressed-tensors' divisor inverted)
    quant::Method method = quant::Method::Nvfp4;
};

// The codes unpacked into parts, and W = parts.dequantize(): e2m1(code) * (scale * globalScale), the
// function the Job's own weights come from, so that an export decodes to them bit for bit. The
// references differ in the last bit only: ModelOpt forms the same product; compressed-tensors divides
// by its stored divisor, whose exact reciprocal globalScale is (docs/formats/README.md, "One decoder").
DecodedLinear decodeFp4Blocks(const LinearRef& ref, const Fp4Blocks& blocks);

}  // namespace qs::formats::detail
