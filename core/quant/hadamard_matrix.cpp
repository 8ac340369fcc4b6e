// Hadamard matrices of the orders real models need: hidden sizes such as 3072 = 12·256, 5120 = 20·256 and
// 7168 = 28·256 are not powers of two. Paley's constructions give the small factors 12, 20 and 28 from the
// quadratic residues mod a prime; the Kronecker product with a Sylvester matrix doubles them.
#include <array>
#include <string>

#include "qs/error.h"
#include "qs/quant/hadamard.h"

namespace qs::quant {
namespace {

struct PaleyFactor {
    std::size_t order;
    int prime;  // q: order q + 1 (q ≡ 3 mod 4, Paley I) or 2 (q + 1) (q ≡ 1 mod 4, Paley II)
};
constexpr std::array<PaleyFactor, 4> kFactors{{{1, 0}, {12, 11}, {20, 19}, {28, 13}}};

bool isPowerOfTwo(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// The Legendre symbol χ(a) mod q: 0 for a ≡ 0, 1 for a quadratic residue, -1 otherwise.
int legendre(int a, int q) {
    a = ((a % q) + q) % q;
    if (a == 0) return 0;
    for (int x = 1; x < q; ++x)
        if ((x * x) % q == a) return 1;
    return -1;
}

// [[0, 1ᵀ], [sign·1, Q]] with Q the Jacobsthal matrix Q(i, j) = χ(j - i) of order q.
HadamardMatrix borderedJacobsthal(int q, int sign) {
    HadamardMatrix c = HadamardMatrix::Zero(q + 1, q + 1);
    for (int i = 1; i <= q; ++i) {
        c(0, i) = 1;
        c(i, 0) = sign;
        for (int j = 1; j <= q; ++j) c(i, j) = legendre(j - i, q);
    }
    return c;
}

HadamardMatrix paley(const PaleyFactor& f) {
    if (f.order == 1) return HadamardMatrix::Ones(1, 1);
    if (f.prime % 4 == 3)  // Paley I: H = I + [[0, 1ᵀ], [-1, Q]] (Q antisymmetric)
        return HadamardMatrix::Identity(f.prime + 1, f.prime + 1) + borderedJacobsthal(f.prime, -1);
    // Paley II: C = [[0, 1ᵀ], [1, Q]] (symmetric); each 0 becomes [[1, -1], [-1, -1]], each ±1 ±[[1, 1], [1, -1]].
    const HadamardMatrix c = borderedJacobsthal(f.prime, 1);
    HadamardMatrix h(2 * c.rows(), 2 * c.cols());
    for (Eigen::Index i = 0; i < c.rows(); ++i)
        for (Eigen::Index j = 0; j < c.cols(); ++j) {
            const int s = c(i, j);
            h.block<2, 2>(2 * i, 2 * j) << (s == 0 ? 1 : s), (s == 0 ? -1 : s), (s == 0 ? -1 : s), (s == 0 ? -1 : -s);
        }
    return h;
}

const PaleyFactor* factorOf(std::size_t n) {
    for (const PaleyFactor& f : kFactors)
        if (n % f.order == 0 && isPowerOfTwo(n / f.order)) return &f;
    return nullptr;
}

}  // namespace

bool isHadamardOrder(std::size_t n) { return factorOf(n) != nullptr; }

std::size_t hadamardBlock(std::size_t n) {
    if (n == 0) throw Error("hadamardBlock: the size must be at least 1");
    std::size_t best = 1;
    for (const PaleyFactor& f : kFactors)
        for (std::size_t b = f.order; b <= n; b *= 2)
            if (n % b == 0 && b > best) best = b;
    return best;
}

HadamardMatrix hadamardMatrix(std::size_t n) {
    const PaleyFactor* f = factorOf(n);
    if (!f)
        throw Error("hadamardMatrix: no Hadamard matrix of order " + std::to_string(n) +
                    " is built (2^k, 12·2^k, 20·2^k or 28·2^k)");
    // H = A ⊗ S: the Paley factor A outside, the Sylvester matrix S of order n / |A| inside, so that RandomHadamard
    // applies S as the fast transform on each of A's rows of coordinates.
    HadamardMatrix s = HadamardMatrix::Ones(1, 1);
    while (static_cast<std::size_t>(s.rows()) * f->order < n) {  // Sylvester doubling: [[S, S], [S, -S]]
        HadamardMatrix next(2 * s.rows(), 2 * s.cols());
        next << s, s, s, -s;
        s = std::move(next);
    }
    const HadamardMatrix a = paley(*f);
    HadamardMatrix h(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n));
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            h.block(i * s.rows(), j * s.cols(), s.rows(), s.cols()) = a(i, j) * s;
    return h;
}

}  // namespace qs::quant
