#pragma once
// Fields of a little-endian stream of 32-bit words. GPTQ (2/3/4/8-bit, docs/formats/gptq.md) and
// compressed-tensors pack-quantized (compressed-tensors.md) both place value i at bits [i*bits, i*bits+bits) of the
// stream formed by consecutive words along the packed axis; 3-bit values straddle words.
#include <cstddef>
#include <cstdint>

namespace qs::formats::detail {

// `words[w * stride]` is word w of the stream (stride > 1 walks down a column of a row-major matrix).
inline std::uint32_t bitField(const std::uint32_t* words, std::size_t stride, std::uint64_t bitPos, int bits) {
    const std::uint64_t w = bitPos / 32;
    const unsigned shift = static_cast<unsigned>(bitPos % 32);
    std::uint64_t v = words[w * stride] >> shift;
    if (shift + static_cast<unsigned>(bits) > 32)
        v |= static_cast<std::uint64_t>(words[(w + 1) * stride]) << (32 - shift);
    return static_cast<std::uint32_t>(v & ((1u << bits) - 1u));
}

// The inverse of bitField: ORs `value` (bits wide) into the stream, which starts zeroed.
inline void setBitField(std::uint32_t* words, std::size_t stride, std::uint64_t bitPos, int bits, std::uint32_t value) {
    const std::uint64_t w = bitPos / 32;
    const unsigned shift = static_cast<unsigned>(bitPos % 32);
    const std::uint64_t v = static_cast<std::uint64_t>(value & ((1u << bits) - 1u)) << shift;
    words[w * stride] |= static_cast<std::uint32_t>(v);
    if (shift + static_cast<unsigned>(bits) > 32) words[(w + 1) * stride] |= static_cast<std::uint32_t>(v >> 32);
}

}  // namespace qs::formats::detail
