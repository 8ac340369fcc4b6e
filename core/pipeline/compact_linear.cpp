#include "qs/pipeline/compact_linear.h"

#include <algorithm>
#include <utility>

namespace qs::pipeline {

CompactLinear::CompactLinear(quant::QuantizedLinear q) : parts_(std::move(q)) {
    const std::vector<std::uint8_t>& codes = parts_.codes;
    codeCount_ = codes.size();
    if (codes.empty() || *std::max_element(codes.begin(), codes.end()) > 15) return;
    nibbles_.resize((codes.size() + 1) / 2);
    const std::size_t pairs = codes.size() / 2;
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < pairs; ++i)
        nibbles_[i] = static_cast<std::uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
    if (codes.size() % 2 != 0) nibbles_.back() = codes.back();
    std::vector<std::uint8_t>().swap(parts_.codes);
    packed_ = true;
}

quant::QuantizedLinear CompactLinear::unpack() const {
    quant::QuantizedLinear q = parts_;
    if (!packed_) return q;
    q.codes.resize(codeCount_);
    const std::size_t pairs = codeCount_ / 2;
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < pairs; ++i) {
        q.codes[2 * i] = nibbles_[i] & 0x0F;
        q.codes[2 * i + 1] = nibbles_[i] >> 4;
    }
    if (codeCount_ % 2 != 0) q.codes.back() = nibbles_.back();
    return q;
}

MatrixF CompactLinear::effectiveWeight() const { return unpack().effectiveWeight(); }

std::uint64_t CompactLinear::heldBytes() const { return packed_ ? nibbles_.size() : parts_.codes.size(); }

}  // namespace qs::pipeline
