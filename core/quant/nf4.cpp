#include "qs/quant/nf4.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "qs/cpu_features.h"
#include "qs/error.h"

#include "fp_codes.h"

namespace qs::quant {
namespace {

// torch.linspace(start, end, steps) in f32 as ATen's CPU kernel computes it: from the start for
// the first half, from the end for the second, so that both ends are exact.
std::vector<float> linspaceF32(float start, float end, int steps) {
    std::vector<float> v(static_cast<std::size_t>(steps));
    const float step = (end - start) / static_cast<float>(steps - 1);
    const int halfway = steps / 2;
    for (int i = 0; i < steps; ++i)
        v[static_cast<std::size_t>(i)] =
            i < halfway ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - i - 1);
    return v;
}

std::array<float, 256> buildDynamicMap() {
    // create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each decade
    // 10^(i-6), i = 0..6, the midpoints of 2^i + 1 points spread over [0.1, 1], both signs; then 0
    // and 1. No "additional items" for these arguments (2^(7-7) - 1 = 0). Arithmetic in f32 like
    // PyTorch's (a Python scalar times an f32 tensor is an f32 multiply).
    std::vector<float> data;
    for (int i = 0; i < 7; ++i) {
        const std::vector<float> bounds = linspaceF32(0.1f, 1.0f, (1 << i) + 1);
        const float decade = static_cast<float>(std::pow(10.0, i - 6));
        std::vector<float> means;
        for (std::size_t k = 0; k + 1 < bounds.size(); ++k) means.push_back((bounds[k] + bounds[k + 1]) / 2.0f);
        for (float m : means) data.push_back(decade * m);
        for (float m : means) data.push_back(-decade * m);
    }
    data.push_back(0.0f);
    data.push_back(1.0f);
    std::sort(data.begin(), data.end());
    std::array<float, 256> map{};
    std::copy(data.begin(), data.end(), map.begin());
    return map;
}

const std::array<float, 255>& dynamic8Thresholds();

// The index of the nearest dynamic-map level: the number of the 255 ascending decision thresholds
// at or below v, as a binary search of 8 steps. Masks instead of conditionals, so that no step is a
// branch and successive values' searches overlap in the pipeline.
[[gnu::always_inline]] inline std::uint8_t dynamic8Index(float v, const std::array<float, 255>& th) {
    std::uint32_t index = 0;
    for (std::uint32_t step = 128; step >= 1; step /= 2)
        index += step & (0u - static_cast<std::uint32_t>(v >= th[index + step - 1]));
    return static_cast<std::uint8_t>(index);
}

struct DoubleQuant {
    std::vector<std::uint8_t> codes;
    std::vector<float> scales;
    float offset = 0.0f;
    std::vector<float> decoded;  // what the absmax values decode to
};

// bitsandbytes quantize_blockwise(absmax - mean(absmax), blocksize=nested) with the dynamic map.
DoubleQuant doubleQuantize(const std::vector<float>& absmax, int nested) {
    DoubleQuant dq;
    const std::size_t n = absmax.size();
    double sum = 0.0;
    for (float a : absmax) sum += a;
    dq.offset = n ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
    const auto& map = dynamicMap8();
    const auto& thresholds = dynamic8Thresholds();
    dq.codes.resize(n);
    dq.decoded.resize(n);
    const std::size_t step = static_cast<std::size_t>(nested);
    dq.scales.resize((n + step - 1) / step);
    // The nested blocks are independent once the offset is known.
#pragma omp parallel for schedule(static)
    for (std::size_t block = 0; block < dq.scales.size(); ++block) {
        const std::size_t b0 = block * step, b1 = std::min(n, b0 + step);
        float amax = 0.0f;
        for (std::size_t i = b0; i < b1; ++i) amax = std::max(amax, std::fabs(absmax[i] - dq.offset));
        dq.scales[block] = amax;
        const float inverse = 1.0f / amax;
        for (std::size_t i = b0; i < b1; ++i) {
            const float centred = absmax[i] - dq.offset;
            // An all-equal block has amax 0: any code decodes to the offset; take the map's zero.
            const std::uint8_t code = amax > 0.0f
                                          ? dynamic8Index(std::clamp(centred * inverse, -1.0f, 1.0f), thresholds)
                                          : static_cast<std::uint8_t>(127);
            dq.codes[i] = code;
            dq.decoded[i] = map[code] * amax + dq.offset;
        }
    }
    return dq;
}

void checkShape(const MatrixF& w, const Nf4Options& o) {
    const auto powerOfTwo = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
    if (!powerOfTwo(o.blockSize) || o.blockSize < 32 || o.blockSize > 4096)
        throw Error("quantizeNf4: blocksize must be a power of two in 32..4096, got " + std::to_string(o.blockSize));
    if (o.nestedBlockSize <= 0) throw Error("quantizeNf4: nested block size must be positive");
    if (w.cols() % o.blockSize != 0)
        throw Error("quantizeNf4: " + std::to_string(w.cols()) +
                    " input features are not a multiple of the block size " + std::to_string(o.blockSize));
}

}  // namespace

const std::array<float, 16>& nf4Table() {
    static const std::array<float, 16> table = {-1.0f,
                                                -0.6961928009986877f,
                                                -0.5250730514526367f,
                                                -0.39491748809814453f,
                                                -0.28444138169288635f,
                                                -0.18477343022823334f,
                                                -0.09105003625154495f,
                                                0.0f,
                                                0.07958029955625534f,
                                                0.16093020141124725f,
                                                0.24611230194568634f,
                                                0.33791524171829224f,
                                                0.44070982933044434f,
                                                0.5626170039176941f,
                                                0.7229568362236023f,
                                                1.0f};
    return table;
}

const std::array<float, 256>& dynamicMap8() {
    static const std::array<float, 256> map = buildDynamicMap();
    return map;
}

namespace {

// Floats in an order-preserving integer key, for bisecting over every float between two values.
std::int32_t orderedKey(float f) {
    const auto i = std::bit_cast<std::int32_t>(f);
    return i >= 0 ? i : std::numeric_limits<std::int32_t>::min() - i;
}
float fromOrderedKey(std::int32_t k) {
    return std::bit_cast<float>(k >= 0 ? k : std::numeric_limits<std::int32_t>::min() - k);
}

// For each adjacent pair of an ascending table of distinct levels, the smallest float at which the
// upper level is strictly nearer than the lower, in f32 arithmetic (bitsandbytes' argmin decision).
// The rounded distances are monotone in v, so "v >= threshold" IS the argmin's decision, ties (to
// the lower level) included, at the cost of one comparison instead of two distances.
template <std::size_t N>
std::array<float, N - 1> decisionThresholds(const std::array<float, N>& t) {
    std::array<float, N - 1> thresholds{};
    for (std::size_t j = 0; j + 1 < N; ++j) {
        const auto upperIsNearer = [&](float v) { return std::fabs(v - t[j + 1]) < std::fabs(v - t[j]); };
        std::int32_t lo = orderedKey(t[j]);      // not nearer: v = t[j]
        std::int32_t hi = orderedKey(t[j + 1]);  // nearer: v = t[j+1]
        while (hi - lo > 1) {
            const std::int32_t mid = lo + (hi - lo) / 2;
            (upperIsNearer(fromOrderedKey(mid)) ? hi : lo) = mid;
        }
        thresholds[j] = fromOrderedKey(hi);
    }
    return thresholds;
}

const std::array<float, 15>& nf4Thresholds() {
    static const std::array<float, 15> thresholds = decisionThresholds(nf4Table());
    return thresholds;
}

const std::array<float, 255>& dynamic8Thresholds() {
    static const std::array<float, 255> thresholds = decisionThresholds(dynamicMap8());
    return thresholds;
}

// The distances to an ascending table fall, then rise: the first nearest level's index is the
// number of pairs whose upper level is strictly nearer. Branch-free, so the callers vectorise.
inline std::uint8_t nf4Index(float v, const std::array<float, 15>& th) {
    std::uint32_t index = 0;
    for (std::size_t j = 0; j < 15; ++j) index += v >= th[j] ? 1u : 0u;
    return static_cast<std::uint8_t>(index);
}

#if QS_X86
// nf4Index on 8 lanes, as the same count found by a branch-free binary search: the upper or lower
// 8 thresholds by the comparison with the middle one, then three steps that pick their threshold
// with register permutes. Thresholds ascend, so the search and the count agree on every float
// (a NaN passes no comparison either way). Compiled for AVX2 whatever the build's -march, and used
// only where the CPU runs it (qs/cpu_features.h).
struct Nf4Search {
    __m256 lower, upper, middle;
    [[gnu::target("avx2")]] explicit Nf4Search(const std::array<float, 15>& th)
        : lower(_mm256_loadu_ps(th.data())),
          upper(_mm256_setr_ps(th[8], th[9], th[10], th[11], th[12], th[13], th[14],
                               std::numeric_limits<float>::infinity())),
          middle(_mm256_set1_ps(th[7])) {}

    [[gnu::always_inline, gnu::target("avx2")]] __m256i index(__m256 v) const {
        const __m256 high = _mm256_cmp_ps(v, middle, _CMP_GE_OQ);
        __m256i local = passed(v, high, _mm256_set1_epi32(3), 4);
        local = _mm256_add_epi32(local, passed(v, high, _mm256_add_epi32(local, _mm256_set1_epi32(1)), 2));
        local = _mm256_add_epi32(local, passed(v, high, local, 1));
        return _mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(high), _mm256_set1_epi32(8)), local);
    }

private:
    // `step` where v reaches threshold k of its own half, else 0. The permute gathers across lanes,
    // so both halves are permuted and each lane's own comparison with the middle blends them.
    [[gnu::always_inline, gnu::target("avx2")]] __m256i passed(__m256 v, __m256 high, __m256i k, int step) const {
        const __m256 threshold =
            _mm256_blendv_ps(_mm256_permutevar8x32_ps(lower, k), _mm256_permutevar8x32_ps(upper, k), high);
        return _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(v, threshold, _CMP_GE_OQ)), _mm256_set1_epi32(step));
    }
};

[[gnu::target("avx2")]] void encodeNf4BlockAvx2(const float* x, std::int64_t bs, float inverse,
                                                const std::array<float, 15>& thresholds, std::uint8_t* codes) {
    const Nf4Search search(thresholds);
    const __m256 inv = _mm256_set1_ps(inverse);
    for (std::int64_t i = 0; i < bs; i += 32)
        detail::storeCodes32(codes + i, search.index(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv)),
                             search.index(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), inv)),
                             search.index(_mm256_mul_ps(_mm256_loadu_ps(x + i + 16), inv)),
                             search.index(_mm256_mul_ps(_mm256_loadu_ps(x + i + 24), inv)));
}
#endif

// One block of bs values (a multiple of 32): the codes of x * inverse.
void encodeNf4Block(const float* x, std::int64_t bs, float inverse, const std::array<float, 15>& thresholds,
                    std::uint8_t* codes) {
#if QS_X86
    if (cpuRunsAvx2()) {
        encodeNf4BlockAvx2(x, bs, inverse, thresholds, codes);
        return;
    }
#endif
#pragma omp simd
    for (std::int64_t i = 0; i < bs; ++i) codes[i] = nf4Index(x[i] * inverse, thresholds);
}

}  // namespace

std::uint8_t nearestNf4(float v) { return nf4Index(v, nf4Thresholds()); }

std::uint8_t nearestDynamic8(float v) {
    // The same count as nf4Index over 255 thresholds, as a branch-free binary search (8 steps).
    return dynamic8Index(v, dynamic8Thresholds());
}

QuantizedLinear quantizeNf4(const MatrixF& w, const Nf4Options& options) {
    checkShape(w, options);
    const std::int64_t rows = w.rows(), cols = w.cols(), bs = options.blockSize;
    const std::int64_t perRow = cols / bs;
    QuantizedLinear q = QuantizedLinear::nf4(rows, cols, options.blockSize);
    q.allocateParts();  // scales [rows, perRow]
    std::vector<float> absmax(static_cast<std::size_t>(rows * perRow));
    const std::array<float, 15>& thresholds = nf4Thresholds();
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < rows * perRow; ++b) {
        const float* x = w.data() + b * bs;
        std::uint8_t* codes = q.codes.data() + b * bs;
        const float amax = detail::absMax(x, bs);
        absmax[static_cast<std::size_t>(b)] = amax;
        // bitsandbytes multiplies by the f32 reciprocal, then clamps to [-1, 1]; the clamp changes
        // no index (beyond +-1 the nearest levels are the ends), so it is left out: a float clamp
        // would keep the loop from vectorising.
        const float inverse = 1.0f / amax;
        if (amax > 0.0f) {
            encodeNf4Block(x, bs, inverse, thresholds, codes);
        } else {
            std::fill(codes, codes + bs, std::uint8_t{7});  // the table's 0
        }
    }
    if (options.doubleQuant) {
        DoubleQuant dq = doubleQuantize(absmax, options.nestedBlockSize);
        std::copy(dq.decoded.begin(), dq.decoded.end(), q.scales.data());
        q.scaleCodes = std::move(dq.codes);
        q.scaleScales = std::move(dq.scales);
        q.scaleOffset = dq.offset;
    } else {
        std::copy(absmax.begin(), absmax.end(), q.scales.data());
    }
    return q;
}

MatrixF dequantizeNf4(const QuantizedLinear& q) {
    MatrixF w(q.rows, q.cols);
    dequantizeNf4(q, w.data());
    return w;
}

void dequantizeNf4(const QuantizedLinear& q, float* w) {
    if (q.codeKind != CodeKind::Nf4 || q.blockRows != 1 || q.blockCols <= 0 ||
        q.codes.size() != static_cast<std::size_t>(q.rows * q.cols))
        throw Error("dequantizeNf4: not an NF4 QuantizedLinear");
    const auto& table = nf4Table();
    const std::int64_t cols = q.cols, bs = q.blockCols;
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < q.rows; ++r) {
        for (std::int64_t c0 = 0, b = 0; c0 < cols; c0 += bs, ++b) {
            const std::int64_t c1 = std::min(cols, c0 + bs);
            const float scale = q.scales(r, b);
            const std::uint8_t* codes = q.codes.data() + r * cols;
            float* out = w + r * cols;
#pragma omp simd
            for (std::int64_t c = c0; c < c1; ++c) out[c] = table[codes[c] & 0xF] * scale;
        }
    }
}

}  // namespace qs::quant
