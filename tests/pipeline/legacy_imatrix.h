#pragma once
// A legacy (.dat) imatrix written byte by byte as llama-imatrix's save_imatrix_legacy lays it out
// (little-endian int32s): the entry count; per entry its name's length and bytes, the chunks it was
// computed on (ncall) and its values, Σx²/count × ncall per column; then the last chunk and the
// dataset's name. For the tests of QuantScope's reader and llama.cpp's loader on the same file.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "qs/pipeline/gguf_imatrix.h"

namespace qs::test {

template <typename T>
void putLittleEndian(std::ofstream& out, T value) {
    out.write(reinterpret_cast<const char*>(&value), sizeof(T));
}

// `from`'s entries, each named `prefix` + its name.
inline void writeLegacyImatrix(const std::filesystem::path& path, const pipeline::Imatrix& from, int ncall,
                               const std::string& dataset, const std::string& prefix = "") {
    std::ofstream out(path, std::ios::binary);
    putLittleEndian<std::int32_t>(out, static_cast<std::int32_t>(from.entries().size()));
    for (const auto& [entry, e] : from.entries()) {
        const std::string name = prefix + entry;
        putLittleEndian<std::int32_t>(out, static_cast<std::int32_t>(name.size()));
        out.write(name.data(), static_cast<std::streamsize>(name.size()));
        putLittleEndian<std::int32_t>(out, ncall);
        putLittleEndian<std::int32_t>(out, static_cast<std::int32_t>(e.sums.size()));
        for (std::size_t i = 0; i < e.sums.size(); ++i)
            putLittleEndian<float>(
                out, e.sums[i] / e.counts[i / static_cast<std::size_t>(e.cols)] * static_cast<float>(ncall));
    }
    putLittleEndian<std::int32_t>(out, ncall);
    putLittleEndian<std::int32_t>(out, static_cast<std::int32_t>(dataset.size()));
    out.write(dataset.data(), static_cast<std::streamsize>(dataset.size()));
}

}  // namespace qs::test
