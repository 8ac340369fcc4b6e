#pragma once
// What llama.cpp's converter does to q/k projections of the llama architecture (convert_hf_to_gguf.py,
// LlamaModel.permute): w.reshape(heads, 2, rows / heads / 2, cols).swapaxes(1, 2), spelled out as the
// index loops of that reshape, for the tests to compare QuantScope's q/k row order against.
#include <cstdint>
#include <vector>

namespace qs::io::test {

inline std::vector<float> converterPermute(const std::vector<float>& w, std::int64_t rows, std::int64_t cols,
                                           int heads) {
    const std::int64_t half = rows / heads / 2;
    std::vector<float> out;
    out.reserve(w.size());
    for (std::int64_t h = 0; h < heads; ++h)  // the swapped shape: [heads, half, 2, cols]
        for (std::int64_t j = 0; j < half; ++j)
            for (std::int64_t a = 0; a < 2; ++a)
                for (std::int64_t c = 0; c < cols; ++c)
                    out.push_back(w[static_cast<std::size_t>(((h * 2 + a) * half + j) * cols + c)]);
    return out;
}

}  // namespace qs::io::test
