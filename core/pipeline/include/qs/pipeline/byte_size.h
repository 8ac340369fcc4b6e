#pragma once
// Sizes as people type them (`--max-memory 16G`): a number, maybe with a fraction, and a unit.
// K, M, G, T (and KiB, MiB, GiB, TiB) are binary, powers of 1024, as in free -g, docker --memory and
// systemd's MemoryMax; KB, MB, GB, TB are decimal, powers of 1000; no unit (or B) is bytes. Units are
// case-insensitive.
#include <cstdint>
#include <string_view>

namespace qs::pipeline {

// Throws qs::Error with one line naming `text` when it is not a size above zero that fits in 64 bits.
std::uint64_t parseByteSize(std::string_view text);

}  // namespace qs::pipeline
