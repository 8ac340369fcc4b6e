#pragma once
// How a quantized linear uses its codes: for each code the value it stands for before scaling and how
// many weights are stored as it. A 4-bit layer whose weights sit on 6 of its 16 levels spends bits it
// does not use; an FP8 layer whose codes never reach ±448 has a scale too large. The GUI draws this.
#include <cstdint>
#include <vector>

#include "qs/io/ggml_block_fields.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

struct CodeLevel {
    int code = 0;             // the stored code: 0 .. 2^bits - 1 (E4M3: the byte, E2M1: the nibble)
    float level = 0.0f;       // what it decodes to before scaling: the integer itself (UnsignedInt),
                              // e2m1(code), e4m3(code), nf4Table()[code]; NaN for E4M3's NaN codes
    std::uint64_t count = 0;  // weights stored as this code
};

// Every code of the layer's code kind, in increasing `level` (NaN codes last; -0 before +0), counted
// over all rows * cols weights. Throws qs::Error for the trellis and ggml blocks, which store no code
// per weight, and when the parts are not one code per weight.
std::vector<CodeLevel> codeUsage(const QuantizedLinear& q);

// The same for a field of a GGUF tensor's blocks (io::ggmlBlockFields: its codes, codebook indices,
// integer sub-block scales or mins): every integer the field can store, what it stands for, and how many
// values are stored as it, in increasing `level`. A codebook index counts groups of weights, a scale
// sub-blocks. Throws qs::Error for a float field (the F16 scales), which has no levels to count.
std::vector<CodeLevel> fieldUsage(const io::GgmlField& field);

// The number of codes with a non-zero count.
int codesUsed(const std::vector<CodeLevel>& usage);

}  // namespace qs::quant
