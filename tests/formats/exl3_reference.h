#pragma once
// A brute-force EXL3 decoder for the tests, written from the description in docs/formats/exl3.md and the
// exllamav3 sources (not from core/formats/exl3_decode.cpp), in double precision and one weight at a
// time: it extracts each weight's 16-bit state bit by bit from the stored I16 words (pair-swapped,
// most significant bit first, circular), hashes it with the codebook formula, places it by the
// tensor-core fragment layout, and rotates with an explicit Sylvester Hadamard matrix.
#include <cstdint>
#include <vector>

namespace qs::formats::test::exl3ref {

enum class Codebook { ThreeInst, Mcg, Mul1 };

double halfValue(std::uint16_t bits);  // IEEE binary16, by sign, exponent and mantissa
double roundToHalf(double v);          // nearest binary16 value, ties to even (normal range)

double codebook(Codebook cb, std::uint16_t state);

// Bit `index` (mod 256 * bits) of a tile's stream, and the 16 bits that end with symbol t.
int streamBit(const std::uint16_t* tile, int bits, long index);
std::uint16_t state(const std::uint16_t* tile, int bits, int t);

// Row-major element (row = K offset, col = N offset) of stream position s: the mma.m16n8k16 B
// fragment layout, lane s / 8 holding 8 values.
int tilePosition(int s);

// Sylvester's construction from [[1]], scaled by 1 / sqrt(n): [[H, H], [H, -H]].
std::vector<double> hadamard(int n);

struct Layer {
    int k = 0, n = 0, bits = 0;
    Codebook cb = Codebook::ThreeInst;
    std::vector<std::uint16_t> trellis;  // [k/16, n/16, 16*bits] as stored
    std::vector<double> suh, svh;
};

std::vector<double> inner(const Layer& l);   // W_hat [k, n]
std::vector<double> weight(const Layer& l);  // diag(suh) H W_hat H diag(svh), [k, n]

}  // namespace qs::formats::test::exl3ref
