// EXL3 tile decoding (qs/formats/exl3.h): codebooks, bit stream, tensor-core permutation, rotations.
// Written from turboderp-org/exllamav3 (HEAD 4f8ad01): exllamav3_ext/quant/codebook.cuh
// decode_3inst<cb>, exl3_dq.cuh dq (16-bit window ending at symbol t of the circular stream, read
// from u32 words MSB first), pack.cu pack_trellis (SWAP16 of each u32: stored I16 pairs are
// swapped), exl3_lib/quantize.py tensor_core_perm and preapply_had_l/r, util/hadamard.py (Sylvester
// from [[1]], scaled by 1/sqrt(128)); checked against ModelCloud/GPTQModel (HEAD f4c327a)
// gptqmodel/nn_modules/exllamav3_torch.py ExllamaV3TorchLinear (_codebook_lut, _unpack_indices).
#include <cmath>
#include <string>

#include "qs/error.h"
#include "qs/formats/exl3.h"
#include "qs/io/dtype.h"
#include "qs/quant/hadamard.h"

namespace qs::formats {

namespace {

constexpr std::uint32_t k3InstMultiplier = 89226354u;
constexpr std::uint32_t k3InstAddend = 64248484u;
constexpr std::int64_t kHadamardSize = 128;

// lop3 0x6a with (0x8fff8fff, 0x3b603b60): keep each half's sign, two low exponent bits and
// mantissa, then force the exponent into 12..15, so each half lies in +-[0.125, 2).
float twoHalves(std::uint32_t x) {
    const std::uint32_t y = (x & 0x8FFF8FFFu) ^ 0x3B603B60u;
    // Both halves have exponents within 3 of each other: their f32 sum is exact; __hadd rounds it once.
    const float sum =
        io::f16ToF32(static_cast<std::uint16_t>(y & 0xFFFFu)) + io::f16ToF32(static_cast<std::uint16_t>(y >> 16));
    return io::f16ToF32(io::f32ToF16(sum));
}

float mul1Value(std::uint32_t x) {
    // dp4a byte sum plus 0x6400: the f16 bit pattern of 1024 + sum (sum <= 1020, an integer).
    const std::uint32_t bytes = (x & 0xFFu) + ((x >> 8) & 0xFFu) + ((x >> 16) & 0xFFu) + (x >> 24);
    const float h = io::f16ToF32(static_cast<std::uint16_t>(0x6400u + bytes));
    // __hfma(h, 0x1eee, 0xc931): h * k fits 22 bits and the sum 20, so the f32 fma is exact; one f16 rounding.
    const float v = std::fma(h, io::f16ToF32(0x1EEE), io::f16ToF32(0xC931));
    return io::f16ToF32(io::f32ToF16(v));
}

std::vector<float> buildTable(Exl3Codebook cb) {
    std::vector<float> table(65536);
    for (std::uint32_t s = 0; s < 65536; ++s) table[s] = exl3CodebookValue(cb, static_cast<std::uint16_t>(s));
    return table;
}

std::array<std::uint16_t, 256> buildPermutation() {
    std::array<std::uint16_t, 256> perm{};
    for (int t = 0; t < 32; ++t) {
        const int r0 = (t % 4) * 2, c0 = t / 4;
        const int rows[4] = {r0, r0 + 1, r0 + 8, r0 + 9};
        for (int half = 0; half < 2; ++half)
            for (int j = 0; j < 4; ++j)
                perm[t * 8 + half * 4 + j] = static_cast<std::uint16_t>(rows[j] * 16 + c0 + 8 * half);
    }
    return perm;
}

// The tile's symbols, in stream order: u32 word m is stored I16 words 2m (low) and 2m + 1 (high), and
// the stream reads each u32 from its most significant bit.
std::array<std::uint8_t, 256> tileSymbols(const std::uint16_t* tile, int bits) {
    std::array<std::uint8_t, 256> symbols{};
    const std::uint64_t mask = (1u << bits) - 1u;
    std::uint64_t acc = 0;
    int have = 0, word = 0;
    for (int i = 0; i < 256; ++i) {
        if (have < bits) {
            acc = (acc << 32) | tile[2 * word] | (static_cast<std::uint64_t>(tile[2 * word + 1]) << 16);
            ++word;
            have += 32;
        }
        have -= bits;
        symbols[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((acc >> have) & mask);
    }
    return symbols;
}

// Row-major tile values (row = K offset, column = N offset).
void decodeTile(const std::uint16_t* tile, int bits, const std::vector<float>& table, float* out) {
    const auto states = exl3TileStates(tile, bits).states;
    const auto& perm = exl3TensorCorePermutation();
    for (std::size_t s = 0; s < 256; ++s) out[perm[s]] = table[states[s]];
}

void requireFits(const Exl3Linear& l) {
    const auto k = l.inFeatures, n = l.outFeatures;
    if (l.bits < 1 || l.bits > 8)
        throw Error("EXL3: " + std::to_string(l.bits) + " bits per weight (readable: 1 to 8)");
    if (k <= 0 || n <= 0 || k % kHadamardSize != 0 || n % kHadamardSize != 0)
        throw Error("EXL3: in_features " + std::to_string(k) + " and out_features " + std::to_string(n) +
                    " must be positive multiples of 128 (the Hadamard-128 rotations)");
    if (static_cast<std::int64_t>(l.trellis.size()) != (k / 16) * (n / 16) * 16 * l.bits)
        throw Error("EXL3: " + std::to_string(l.trellis.size()) + " trellis words do not fit [" +
                    std::to_string(k / 16) + ", " + std::to_string(n / 16) + ", " + std::to_string(16 * l.bits) + "]");
    if (static_cast<std::int64_t>(l.suh.size()) != k || static_cast<std::int64_t>(l.svh.size()) != n)
        throw Error("EXL3: suh has " + std::to_string(l.suh.size()) + " values and svh " +
                    std::to_string(l.svh.size()) + ", expected " + std::to_string(k) + " and " + std::to_string(n));
}

const std::uint16_t* tileAt(const Exl3Linear& l, std::int64_t tk, std::int64_t tn) {
    return l.trellis.data() + (tk * (l.outFeatures / 16) + tn) * 16 * l.bits;
}

// Rows [first, first + 128) of w: x <- H x across the rows, a butterfly of whole rows per stage.
void hadamardAcrossRows(MatrixF& w, std::int64_t first) {
    const std::int64_t cols = w.cols();
    for (std::int64_t h = 1; h < kHadamardSize; h *= 2)
        for (std::int64_t i = 0; i < kHadamardSize; i += 2 * h)
            for (std::int64_t j = i; j < i + h; ++j) {
                float* a = w.row(first + j).data();
                float* b = w.row(first + j + h).data();
#pragma omp simd
                for (std::int64_t c = 0; c < cols; ++c) {
                    const float u = a[c], v = b[c];
                    a[c] = u + v;
                    b[c] = u - v;
                }
            }
}

}  // namespace

std::string_view exl3CodebookName(Exl3Codebook cb) {
    switch (cb) {
        case Exl3Codebook::ThreeInst: return "3inst";
        case Exl3Codebook::Mcg: return "mcg";
        case Exl3Codebook::Mul1: return "mul1";
    }
    return "3inst";
}

float exl3CodebookValue(Exl3Codebook cb, std::uint16_t state) {
    const std::uint32_t x = state;
    switch (cb) {
        case Exl3Codebook::ThreeInst: return twoHalves(x * k3InstMultiplier + k3InstAddend);
        case Exl3Codebook::Mcg: return twoHalves(x * kExl3McgMultiplier);
        case Exl3Codebook::Mul1: return mul1Value(x * kExl3Mul1Multiplier);
    }
    return 0.0f;
}

const std::vector<float>& exl3CodebookTable(Exl3Codebook cb) {
    static const std::array<std::vector<float>, 3> tables = {
        buildTable(Exl3Codebook::ThreeInst), buildTable(Exl3Codebook::Mcg), buildTable(Exl3Codebook::Mul1)};
    return tables[static_cast<std::size_t>(cb)];
}

const std::array<std::uint16_t, 256>& exl3TensorCorePermutation() {
    static const std::array<std::uint16_t, 256> perm = buildPermutation();
    return perm;
}

Exl3TileStates exl3TileStates(const std::uint16_t* tile, int bits) {
    const auto symbols = tileSymbols(tile, bits);
    const std::uint32_t b = static_cast<std::uint32_t>(bits);
    // Tail-biting: the register starts holding the stream's last 16 bits, from the last ceil(16 / bits) symbols.
    const int warmUp = (16 + bits - 1) / bits;
    std::uint32_t state = 0;
    for (int i = 256 - warmUp; i < 256; ++i) state = ((state << b) | symbols[static_cast<std::size_t>(i)]) & 0xFFFFu;
    Exl3TileStates out;
    out.start = static_cast<std::uint16_t>(state);
    for (std::size_t i = 0; i < 256; ++i) {
        state = ((state << b) | symbols[i]) & 0xFFFFu;
        out.states[i] = static_cast<std::uint16_t>(state);
    }
    return out;
}

MatrixF exl3InnerWeight(const Exl3Linear& l) {
    requireFits(l);
    const auto& table = exl3CodebookTable(l.codebook);
    const std::int64_t tilesK = l.inFeatures / 16, tilesN = l.outFeatures / 16;
    MatrixF inner(l.inFeatures, l.outFeatures);
#pragma omp parallel for schedule(static)
    for (std::int64_t tk = 0; tk < tilesK; ++tk) {
        float values[256];
        for (std::int64_t tn = 0; tn < tilesN; ++tn) {
            decodeTile(tileAt(l, tk, tn), l.bits, table, values);
            for (int r = 0; r < 16; ++r)
                for (int c = 0; c < 16; ++c) inner(tk * 16 + r, tn * 16 + c) = values[r * 16 + c];
        }
    }
    return inner;
}

MatrixF exl3Dequantize(const Exl3Linear& l) {
    requireFits(l);
    const auto& table = exl3CodebookTable(l.codebook);
    const std::int64_t k = l.inFeatures, n = l.outFeatures;
    // [out, in] = diag(svh) H W_hat^T H diag(suh): both rotations with the unnormalised transform, then
    // the two 1/sqrt(128) factors as one exact 1/128.
    MatrixF w(n, k);
#pragma omp parallel for schedule(dynamic)
    for (std::int64_t block = 0; block < n / kHadamardSize; ++block) {
        const std::int64_t first = block * kHadamardSize;
        float values[256];
        for (std::int64_t tn = first / 16; tn < (first + kHadamardSize) / 16; ++tn)
            for (std::int64_t tk = 0; tk < k / 16; ++tk) {
                decodeTile(tileAt(l, tk, tn), l.bits, table, values);
                for (int r = 0; r < 16; ++r)
                    for (int c = 0; c < 16; ++c) w(tn * 16 + c, tk * 16 + r) = values[r * 16 + c];
            }
        for (std::int64_t row = first; row < first + kHadamardSize; ++row)
            for (std::int64_t c = 0; c < k; c += kHadamardSize) quant::fwht(w.row(row).data() + c, kHadamardSize);
        hadamardAcrossRows(w, first);
        for (std::int64_t row = first; row < first + kHadamardSize; ++row) {
            const float rowScale = l.svh[static_cast<std::size_t>(row)] / 128.0f;
            float* out = w.row(row).data();
            for (std::int64_t c = 0; c < k; ++c) out[c] = out[c] * l.suh[static_cast<std::size_t>(c)] * rowScale;
        }
    }
    return w;
}

}  // namespace qs::formats
