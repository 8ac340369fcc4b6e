#pragma once
// QuantScope's own trellis layout (docs/formats/trellis.md), shared by its writer
// (trellis_encoder.cpp) and reader (trellis_codec.cpp). Per linear with prefix p:
//   p.trellis_header  I64 [6]   out_features, in_features, state_bits L, bits K, group_size G,
//                               rotation_seed (the u64 seed's bit pattern)
//   p.trellis_starts  U16 [N, in/G]   each group's L-bit start state
//   p.trellis_scales  F16 [N, in/G]   each group's scale
//   p.trellis_codes   U8  [N, ceil(in/G * (G-1) * K / 8)]   per row, the K-bit symbols of steps
//                               1..G-1 of each group in turn, as a bit stream: symbol i at bits
//                               [i*K, i*K+K), bit j of the stream is bit j%8 of byte j/8
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qs/quant/quantized_linear.h"

namespace qs::formats::detail {

inline constexpr std::string_view kTrellisHeaderSuffix = ".trellis_header";
inline constexpr std::string_view kTrellisStartsSuffix = ".trellis_starts";
inline constexpr std::string_view kTrellisScalesSuffix = ".trellis_scales";
inline constexpr std::string_view kTrellisCodesSuffix = ".trellis_codes";
inline constexpr int kTrellisHeaderSize = 6;

struct TrellisHeader {
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    int stateBits = 0;  // L
    int bits = 0;       // K
    int groupSize = 0;  // G
    std::uint64_t rotationSeed = 0;

    std::vector<std::int64_t> values() const;  // the I64 [6] tensor
    static TrellisHeader fromValues(std::span<const std::int64_t, kTrellisHeaderSize> v);
    // "" when L, K, G and the shape fit what the decoder replays; else why not.
    std::string problem() const;
};

std::int64_t trellisCodeBytesPerRow(const TrellisHeader& h);
// q.codes without each group's first code (the start state holds it), packed row by row.
std::vector<std::uint8_t> packTrellisSymbols(const quant::QuantizedLinear& q);
// The inverse: fills codes [rows * cols] at every step but the first of each group.
void unpackTrellisSymbols(const TrellisHeader& h, const std::uint8_t* packed, std::vector<std::uint8_t>& codes);

}  // namespace qs::formats::detail
