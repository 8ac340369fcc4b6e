#pragma once
// Two 4-bit codes per byte, in the two orders checkpoints use:
//   EvenLow   element 2j in the low nibble, 2j+1 in the high one (OCP MX / gpt-oss MXFP4, NVFP4 of
//             ModelOpt and compressed-tensors)
//   EvenHigh  element 2j in the HIGH nibble (bitsandbytes NF4/FP4)
// An odd count is padded with a zero code, as bitsandbytes does.
#include <cstdint>
#include <span>
#include <vector>

namespace qs::quant {

enum class NibbleOrder { EvenLow, EvenHigh };

std::vector<std::uint8_t> packNibbles(std::span<const std::uint8_t> codes, NibbleOrder order);
// The first `count` codes of `packed` (count <= 2 * packed.size()).
std::vector<std::uint8_t> unpackNibbles(std::span<const std::uint8_t> packed, std::size_t count, NibbleOrder order);

}  // namespace qs::quant
