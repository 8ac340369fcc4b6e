#include "qs/quant/nibbles.h"

#include <string>

#include "qs/error.h"

namespace qs::quant {

std::vector<std::uint8_t> packNibbles(std::span<const std::uint8_t> codes, NibbleOrder order) {
    const std::size_t pairs = codes.size() / 2;
    std::vector<std::uint8_t> packed((codes.size() + 1) / 2);
    const unsigned evenShift = order == NibbleOrder::EvenLow ? 0 : 4;
    const unsigned oddShift = 4 - evenShift;
#pragma omp simd
    for (std::size_t j = 0; j < pairs; ++j)
        packed[j] =
            static_cast<std::uint8_t>(((codes[2 * j] & 0xF) << evenShift) | ((codes[2 * j + 1] & 0xF) << oddShift));
    if (codes.size() % 2) packed[pairs] = static_cast<std::uint8_t>((codes[2 * pairs] & 0xF) << evenShift);
    return packed;
}

std::vector<std::uint8_t> unpackNibbles(std::span<const std::uint8_t> packed, std::size_t count, NibbleOrder order) {
    if (count > 2 * packed.size())
        throw Error("unpackNibbles: " + std::to_string(count) + " codes asked of " + std::to_string(packed.size()) +
                    " bytes");
    std::vector<std::uint8_t> codes(count);
    const unsigned evenShift = order == NibbleOrder::EvenLow ? 0 : 4;
    const unsigned oddShift = 4 - evenShift;
    for (std::size_t i = 0; i < count; ++i)
        codes[i] = static_cast<std::uint8_t>((packed[i / 2] >> (i % 2 ? oddShift : evenShift)) & 0xF);
    return codes;
}

}  // namespace qs::quant
