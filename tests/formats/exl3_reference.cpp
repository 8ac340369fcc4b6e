#include "exl3_reference.h"

#include <algorithm>
#include <cmath>

namespace qs::formats::test::exl3ref {

double halfValue(std::uint16_t bits) {
    const double sign = (bits & 0x8000) ? -1.0 : 1.0;
    const int exponent = (bits >> 10) & 0x1F;
    const int mantissa = bits & 0x3FF;
    if (exponent == 0) return sign * std::ldexp(mantissa, -24);
    if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
    return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double roundToHalf(double v) {
    if (v == 0.0) return 0.0;
    int e = 0;
    std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
    const double quantum = std::ldexp(1.0, std::max(e - 1, -14) - 10);
    return std::nearbyint(v / quantum) * quantum;  // default rounding mode: to nearest, ties to even
}

double codebook(Codebook cb, std::uint16_t s) {
    const std::uint64_t x64 = s;
    if (cb == Codebook::Mul1) {
        // codebook.cuh decode_3inst<2>: byte sum of x * 0x83DCD12D (mod 2^32) plus 0x6400 as f16 bits,
        // then one f16 fma with 0x1eee and 0xc931.
        const std::uint32_t x = static_cast<std::uint32_t>((x64 * 0x83DCD12Dull) & 0xFFFFFFFFull);
        const unsigned sum = (x & 0xFF) + ((x >> 8) & 0xFF) + ((x >> 16) & 0xFF) + (x >> 24);
        return roundToHalf(halfValue(static_cast<std::uint16_t>(0x6400 + sum)) * halfValue(0x1EEE) + halfValue(0xC931));
    }
    // decode_3inst<0> and <1>: x * a (+ b), lop3 0x6a = (x & 0x8fff8fff) ^ 0x3b603b60, low + high half.
    const std::uint64_t raw = cb == Codebook::ThreeInst ? x64 * 89226354ull + 64248484ull : x64 * 0xCBAC1FEDull;
    const std::uint32_t x = static_cast<std::uint32_t>(raw & 0xFFFFFFFFull);
    const std::uint32_t y = (x & 0x8FFF8FFFu) ^ 0x3B603B60u;
    return roundToHalf(halfValue(static_cast<std::uint16_t>(y & 0xFFFF)) +
                       halfValue(static_cast<std::uint16_t>(y >> 16)));
}

int streamBit(const std::uint16_t* tile, int bits, long index) {
    const long total = 256L * bits;
    index = ((index % total) + total) % total;
    // pack.cu writes 16-bit words MSB first, then swaps the two halves of every 32-bit word.
    const long word = index / 16;
    const std::uint16_t stored = tile[word ^ 1];
    return (stored >> (15 - index % 16)) & 1;
}

std::uint16_t state(const std::uint16_t* tile, int bits, int t) {
    const long end = static_cast<long>(t + 1) * bits;
    unsigned s = 0;
    for (long i = end - 16; i < end; ++i) s = (s << 1) | static_cast<unsigned>(streamBit(tile, bits, i));
    return static_cast<std::uint16_t>(s);
}

int tilePosition(int s) {
    const int lane = s / 8, j = s % 8;
    const int row = (lane % 4) * 2 + (j & 1) + ((j >> 1) & 1) * 8;
    const int col = lane / 4 + (j >> 2) * 8;
    return row * 16 + col;
}

std::vector<double> hadamard(int n) {
    std::vector<double> h{1.0};
    for (int d = 1; d < n; d *= 2) {
        std::vector<double> next(static_cast<std::size_t>(4 * d * d));
        for (int i = 0; i < d; ++i)
            for (int j = 0; j < d; ++j) {
                const double v = h[static_cast<std::size_t>(i * d + j)];
                next[static_cast<std::size_t>(i * 2 * d + j)] = v;
                next[static_cast<std::size_t>(i * 2 * d + j + d)] = v;
                next[static_cast<std::size_t>((i + d) * 2 * d + j)] = v;
                next[static_cast<std::size_t>((i + d) * 2 * d + j + d)] = -v;
            }
        h = std::move(next);
    }
    const double norm = 1.0 / std::sqrt(static_cast<double>(n));
    for (double& v : h) v *= norm;
    return h;
}

std::vector<double> inner(const Layer& l) {
    std::vector<double> w(static_cast<std::size_t>(l.k) * l.n);
    const int tilesN = l.n / 16, words = 16 * l.bits;
    for (int tk = 0; tk < l.k / 16; ++tk)
        for (int tn = 0; tn < tilesN; ++tn) {
            const std::uint16_t* tile = l.trellis.data() + static_cast<std::size_t>((tk * tilesN + tn) * words);
            for (int s = 0; s < 256; ++s) {
                const int p = tilePosition(s);
                w[static_cast<std::size_t>((tk * 16 + p / 16) * l.n + tn * 16 + p % 16)] =
                    codebook(l.cb, state(tile, l.bits, s));
            }
        }
    return w;
}

std::vector<double> weight(const Layer& l) {
    const auto h = hadamard(128);
    const auto w = inner(l);
    const auto at = [&](const std::vector<double>& m, int r, int c) {
        return m[static_cast<std::size_t>(r) * l.n + c];
    };
    std::vector<double> a(w.size()), b(w.size());
    // a = diag(suh) * blockdiag(H) * W_hat
    for (int r = 0; r < l.k; ++r)
        for (int c = 0; c < l.n; ++c) {
            double sum = 0.0;
            const int base = r / 128 * 128;
            for (int j = 0; j < 128; ++j) sum += h[static_cast<std::size_t>((r % 128) * 128 + j)] * at(w, base + j, c);
            a[static_cast<std::size_t>(r) * l.n + c] = sum * l.suh[static_cast<std::size_t>(r)];
        }
    // b = a * blockdiag(H) * diag(svh)
    for (int r = 0; r < l.k; ++r)
        for (int c = 0; c < l.n; ++c) {
            double sum = 0.0;
            const int base = c / 128 * 128;
            for (int j = 0; j < 128; ++j) sum += at(a, r, base + j) * h[static_cast<std::size_t>(j * 128 + c % 128)];
            b[static_cast<std::size_t>(r) * l.n + c] = sum * l.svh[static_cast<std::size_t>(c)];
        }
    return b;
}

}  // namespace qs::formats::test::exl3ref
