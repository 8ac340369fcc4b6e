#pragma once
// CompactLinear: a finished QuantizedLinear held in less memory while a Job goes on to the next
// layers. QuantizedLinear keeps one byte per code; when every code fits in four bits (int4 GPTQ, AWQ
// and RTN, MXFP4, NVFP4, NF4, a trellis with K <= 4) they are held two per byte here (the even
// element in the low nibble), halving the largest part of a finished layer (218 MB -> 109 MB for a
// 4096-wide Llama layer). unpack() gives back the QuantizedLinear it was made from, bit for bit.
#include <cstdint>
#include <vector>

#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

class CompactLinear {
public:
    explicit CompactLinear(quant::QuantizedLinear q);

    quant::QuantizedLinear unpack() const;
    // q.effectiveWeight() of the original; unpacks into a temporary, so the codes are not kept twice.
    MatrixF effectiveWeight() const;
    // The parts other than the codes (rows, cols, scales, measurements...); its codes are empty when packed.
    const quant::QuantizedLinear& parts() const { return parts_; }
    bool packed() const { return packed_; }
    std::uint64_t heldBytes() const;  // the codes as held here

private:
    quant::QuantizedLinear parts_;
    std::vector<std::uint8_t> nibbles_;  // two codes per byte when packed_
    std::size_t codeCount_ = 0;
    bool packed_ = false;
};

}  // namespace qs::pipeline
