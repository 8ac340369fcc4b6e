#pragma once
// Element-by-element comparisons of decoded weights with brute-force expectations.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "qs/formats/linear_codec.h"

namespace qs::formats::test {

// Every element of `actual` equals expected(r, c) up to `relTol` (relative, with an absolute floor).
inline void expectWeight(const MatrixF& actual, std::int64_t rows, std::int64_t cols,
                         const std::function<float(std::int64_t, std::int64_t)>& expected, float relTol = 1e-6f) {
    ASSERT_EQ(actual.rows(), rows);
    ASSERT_EQ(actual.cols(), cols);
    int failures = 0;
    for (std::int64_t r = 0; r < rows && failures < 5; ++r)
        for (std::int64_t c = 0; c < cols && failures < 5; ++c) {
            const float e = expected(r, c), a = actual(r, c);
            if (std::isnan(e) && std::isnan(a)) continue;
            if (std::abs(a - e) > relTol * std::max(1e-6f, std::abs(e))) {
                ADD_FAILURE() << "element (" << r << ", " << c << "): decoded " << a << ", expected " << e;
                ++failures;
            }
        }
}

// The unpacked parts decode (through QuantizedLinear::dequantize) to the same weight, bit for bit by
// default: the Job's weights come from the parts, so an export must read back to exactly them.
inline void expectPartsReproduceWeight(const DecodedLinear& d, float relTol = 0.0f) {
    ASSERT_TRUE(d.partsExact);
    const MatrixF fromParts = d.parts.dequantize();
    expectWeight(
        fromParts, d.weight.rows(), d.weight.cols(), [&](std::int64_t r, std::int64_t c) { return d.weight(r, c); },
        relTol);
}

}  // namespace qs::formats::test
