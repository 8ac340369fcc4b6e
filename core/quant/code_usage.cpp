#include "qs/quant/code_usage.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/nf4.h"

namespace qs::quant {
namespace {

int codeCount(const QuantizedLinear& q) {
    switch (q.codeKind) {
        case CodeKind::UnsignedInt: return 1 << q.bits;
        case CodeKind::E4M3: return 256;
        case CodeKind::E2M1:
        case CodeKind::Nf4: return 16;
        case CodeKind::Trellis:
        case CodeKind::GgmlBlocks: break;
    }
    throw Error(std::string("code usage: ") + std::string(methodName(q.method)) + " stores no code per weight");
}

float levelOf(const QuantizedLinear& q, int code) {
    switch (q.codeKind) {
        case CodeKind::E4M3: return io::e4m3ToF32(static_cast<std::uint8_t>(code));
        case CodeKind::E2M1: return io::e2m1ToF32(static_cast<std::uint8_t>(code));
        case CodeKind::Nf4: return nf4Table()[static_cast<std::size_t>(code)];
        default: return static_cast<float>(code);
    }
}

// Increasing level, NaN last, -0 before +0 (E2M1 code 8, E4M3 0x80): a stable order for the bars.
void sortByLevel(std::vector<CodeLevel>& usage) {
    std::stable_sort(usage.begin(), usage.end(), [](const CodeLevel& a, const CodeLevel& b) {
        if (std::isnan(a.level) || std::isnan(b.level)) return !std::isnan(a.level) && std::isnan(b.level);
        if (a.level == b.level) return std::signbit(a.level) && !std::signbit(b.level);
        return a.level < b.level;
    });
}

}  // namespace

std::vector<CodeLevel> codeUsage(const QuantizedLinear& q) {
    const int n = codeCount(q);
    if (q.bits < 1 || q.bits > 8) throw Error("code usage: " + std::to_string(q.bits) + " bits per code");
    if (q.codes.size() != static_cast<std::size_t>(q.rows * q.cols))
        throw Error("code usage: " + std::to_string(q.codes.size()) + " codes for " + std::to_string(q.rows) + " x " +
                    std::to_string(q.cols) + " weights");
    std::array<std::uint64_t, 256> counts{};
    for (const std::uint8_t c : q.codes) ++counts[c];
    std::vector<CodeLevel> usage;
    usage.reserve(static_cast<std::size_t>(n));
    std::uint64_t outside = 0;
    for (int c = 0; c < 256; ++c) {
        if (c < n)
            usage.push_back({c, levelOf(q, c), counts[static_cast<std::size_t>(c)]});
        else
            outside += counts[static_cast<std::size_t>(c)];
    }
    if (outside > 0)
        throw Error("code usage: " + std::to_string(outside) + " codes exceed " + std::to_string(q.bits) + " bits");
    sortByLevel(usage);
    return usage;
}

std::vector<CodeLevel> fieldUsage(const io::GgmlField& field) {
    if (!field.isInteger()) throw Error("code usage: " + field.what + " are not integers");
    const std::vector<std::uint64_t> counts = field.usage();
    std::vector<CodeLevel> usage;
    usage.reserve(counts.size());
    for (std::size_t k = 0; k < counts.size(); ++k) usage.push_back({static_cast<int>(k), field.levels[k], counts[k]});
    sortByLevel(usage);
    return usage;
}

int codesUsed(const std::vector<CodeLevel>& usage) {
    return static_cast<int>(std::count_if(usage.begin(), usage.end(), [](const CodeLevel& l) { return l.count > 0; }));
}

}  // namespace qs::quant
