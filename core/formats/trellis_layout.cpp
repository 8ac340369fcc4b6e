#include "trellis_layout.h"

#include <string>

#include "qs/quant/trellis.h"

namespace qs::formats::detail {

namespace {

std::int64_t symbolsPerRow(const TrellisHeader& h) { return h.cols / h.groupSize * (h.groupSize - 1); }

}  // namespace

std::vector<std::int64_t> TrellisHeader::values() const {
    return {rows, cols, stateBits, bits, groupSize, static_cast<std::int64_t>(rotationSeed)};
}

TrellisHeader TrellisHeader::fromValues(std::span<const std::int64_t, kTrellisHeaderSize> v) {
    const auto narrow = [](std::int64_t x) { return x < 0 || x > 1 << 20 ? -1 : static_cast<int>(x); };
    return {v[0], v[1], narrow(v[2]), narrow(v[3]), narrow(v[4]), static_cast<std::uint64_t>(v[5])};
}

std::string TrellisHeader::problem() const {
    if (stateBits < 1 || stateBits > quant::kTrellisMaxL || bits < 1 || bits > quant::kTrellisMaxK || bits >= stateBits)
        return "state bits " + std::to_string(stateBits) + " and bits " + std::to_string(bits) +
               " are not 1 <= bits <= 4, bits < state bits <= 16";
    if (groupSize < 2 || (groupSize & (groupSize - 1)) != 0)
        return "group size " + std::to_string(groupSize) + " is not a power of two >= 2";
    if (rows <= 0 || cols <= 0 || cols % groupSize != 0)
        return "the weight [" + std::to_string(rows) + ", " + std::to_string(cols) +
               "] is empty or not whole groups of " + std::to_string(groupSize);
    return "";
}

std::int64_t trellisCodeBytesPerRow(const TrellisHeader& h) { return (symbolsPerRow(h) * h.bits + 7) / 8; }

std::vector<std::uint8_t> packTrellisSymbols(const quant::QuantizedLinear& q) {
    const TrellisHeader h{q.rows, q.cols, q.trellis.L, q.trellis.K, q.trellis.groupSize, q.trellis.rotationSeed};
    const std::int64_t stride = trellisCodeBytesPerRow(h), groups = q.cols / h.groupSize;
    std::vector<std::uint8_t> packed(static_cast<std::size_t>(q.rows * stride), 0);
    for (std::int64_t r = 0; r < q.rows; ++r) {
        std::uint8_t* row = packed.data() + r * stride;
        std::int64_t bit = 0;
        for (std::int64_t g = 0; g < groups; ++g)
            for (int t = 1; t < h.groupSize; ++t) {
                const std::uint8_t symbol = q.codes[static_cast<std::size_t>(r * q.cols + g * h.groupSize + t)];
                for (int b = 0; b < h.bits; ++b, ++bit)
                    row[bit / 8] = static_cast<std::uint8_t>(row[bit / 8] | (((symbol >> b) & 1u) << (bit % 8)));
            }
    }
    return packed;
}

void unpackTrellisSymbols(const TrellisHeader& h, const std::uint8_t* packed, std::vector<std::uint8_t>& codes) {
    const std::int64_t stride = trellisCodeBytesPerRow(h), groups = h.cols / h.groupSize;
    for (std::int64_t r = 0; r < h.rows; ++r) {
        const std::uint8_t* row = packed + r * stride;
        std::int64_t bit = 0;
        for (std::int64_t g = 0; g < groups; ++g)
            for (int t = 1; t < h.groupSize; ++t) {
                unsigned symbol = 0;
                for (int b = 0; b < h.bits; ++b, ++bit) symbol |= ((row[bit / 8] >> (bit % 8)) & 1u) << b;
                codes[static_cast<std::size_t>(r * h.cols + g * h.groupSize + t)] = static_cast<std::uint8_t>(symbol);
            }
    }
}

}  // namespace qs::formats::detail
