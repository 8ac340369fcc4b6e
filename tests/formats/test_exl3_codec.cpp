// EXL3 (exllamav3), docs/formats/exl3.md: the codec against the brute-force reference of exl3_reference.h on
// random tiles (every codebook, 1..8 bits, several shapes, both sign forms), values pinned by hand,
// tail-biting, and checkpoints written here (config.json, quantization_config.json, no config).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/exl3.h"
#include "qs/formats/linear_reader.h"

#include "exl3_reference.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

using exl3ref::Codebook;

const std::string kPrefix = "model.layers.0.self_attn.q_proj";

Exl3Codebook ours(Codebook cb) {
    return cb == Codebook::Mcg    ? Exl3Codebook::Mcg
           : cb == Codebook::Mul1 ? Exl3Codebook::Mul1
                                  : Exl3Codebook::ThreeInst;
}

std::vector<std::uint8_t> u16Bytes(const std::vector<std::uint16_t>& v) {
    std::vector<std::uint8_t> b(v.size() * 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
        b[2 * i] = static_cast<std::uint8_t>(v[i] & 0xFF);
        b[2 * i + 1] = static_cast<std::uint8_t>(v[i] >> 8);
    }
    return b;
}

// A random EXL3 linear as stored: trellis words, and sign x scale vectors as f16 bits or packed signs.
struct Stored {
    exl3ref::Layer layer;
    bool packed = false;
    std::vector<std::uint16_t> suWords, svWords;  // f16 bits [k], [n]; or packed sign words [k/16], [n/16]
};

std::vector<std::uint16_t> randomWords(std::mt19937& rng, std::size_t count) {
    std::vector<std::uint16_t> w(count);
    for (auto& x : w) x = static_cast<std::uint16_t>(rng() & 0xFFFF);
    return w;
}

// f16 values +-[0.25, 2): random sign, exponent 13..15, random mantissa.
std::vector<std::uint16_t> randomScales(std::mt19937& rng, int count) {
    std::vector<std::uint16_t> h(static_cast<std::size_t>(count));
    for (auto& x : h) x = static_cast<std::uint16_t>(((rng() & 1) << 15) | ((13 + rng() % 3) << 10) | (rng() & 0x3FF));
    return h;
}

std::vector<double> expand(const std::vector<std::uint16_t>& words, bool packed, int count) {
    std::vector<double> v(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
        v[static_cast<std::size_t>(i)] =
            packed ? (((words[static_cast<std::size_t>(i / 16)] >> (i % 16)) & 1) ? -1.0 : 1.0)
                   : exl3ref::halfValue(words[static_cast<std::size_t>(i)]);
    return v;
}

Stored randomLayer(int k, int n, int bits, Codebook cb, unsigned seed, bool packed = false) {
    std::mt19937 rng(seed);
    Stored s;
    s.layer.k = k;
    s.layer.n = n;
    s.layer.bits = bits;
    s.layer.cb = cb;
    s.layer.trellis = randomWords(rng, static_cast<std::size_t>(k / 16) * (n / 16) * 16 * bits);
    s.packed = packed;
    s.suWords = packed ? randomWords(rng, static_cast<std::size_t>(k / 16)) : randomScales(rng, k);
    s.svWords = packed ? randomWords(rng, static_cast<std::size_t>(n / 16)) : randomScales(rng, n);
    s.layer.suh = expand(s.suWords, packed, k);
    s.layer.svh = expand(s.svWords, packed, n);
    return s;
}

void addLayer(Fixture& f, const std::string& p, const Stored& s) {
    const auto& l = s.layer;
    f.add(p + ".trellis", "I16", {l.k / 16, l.n / 16, 16 * l.bits}, u16Bytes(l.trellis));
    if (s.packed) {
        f.add(p + ".su", "I16", {l.k / 16}, u16Bytes(s.suWords));
        f.add(p + ".sv", "I16", {l.n / 16}, u16Bytes(s.svWords));
    } else {
        f.add(p + ".suh", "F16", {l.k}, u16Bytes(s.suWords));
        f.add(p + ".svh", "F16", {l.n}, u16Bytes(s.svWords));
    }
    // exl3_lib/quantize.py stores the multiplier as torch.tensor(mult, dtype=uint32).view(int): I32, shape [].
    if (l.cb == Codebook::Mcg) f.addI32(p + ".mcg", {}, {static_cast<std::int32_t>(kExl3McgMultiplier)});
    if (l.cb == Codebook::Mul1) f.addI32(p + ".mul1", {}, {static_cast<std::int32_t>(kExl3Mul1Multiplier)});
}

nlohmann::json exl3Config(double bits = 4.0) {
    return {{"quant_method", "exl3"},
            {"version", "0.0.5"},
            {"bits", bits},
            {"head_bits", 6},
            {"calibration", {{"rows", 100}, {"cols", 2048}}},
            {"out_scales", "auto"}};
}

// max |a - e| / (|e| + rms(e)): relative where the weight is large, against the layer's scale near zero.
double worstRelativeError(const MatrixF& decodedOutIn, const exl3ref::Layer& l) {
    const auto expected = exl3ref::weight(l);  // [k, n]
    double sq = 0.0;
    for (const double e : expected) sq += e * e;
    const double rms = std::sqrt(sq / static_cast<double>(expected.size()));
    double worst = 0.0;
    for (int r = 0; r < l.k; ++r)
        for (int c = 0; c < l.n; ++c) {
            const double e = expected[static_cast<std::size_t>(r) * l.n + c];
            worst = std::max(worst, std::abs(static_cast<double>(decodedOutIn(c, r)) - e) / (std::abs(e) + rms));
        }
    return worst;
}

TEST(Exl3Codebook, PinnedValues) {
    // 3inst, state 0: x = 0 * 89226354 + 64248484 = 0x03D45AA4; x & 0x8fff8fff = 0x03D40AA4;
    // ^ 0x3b603b60 = 0x38B431C4. Low half 0x31C4: exponent 12 -> 2^-3, mantissa 0x1C4 = 452:
    // (1 + 452/1024) / 8 = 0.18017578125. High half 0x38B4: exponent 14 -> 2^-1, mantissa 0xB4 = 180:
    // (1 + 180/1024) / 2 = 0.587890625. Sum 0.76806640625 = 1573 * 2^-11, an f16.
    EXPECT_EQ(exl3CodebookValue(Exl3Codebook::ThreeInst, 0), 0.76806640625f);
    // 3inst, state 1: x = 153474838 = 0x0925D716 -> & mask 0x09258716 -> ^ 0x3b603b60 = 0x3245BC76.
    // 0xBC76 = -(1 + 0x076/1024) * 2^0 = -(1 + 118/1024) = -1.115234375; 0x3245: exponent 12, mantissa
    // 0x245 = 581: (1 + 581/1024) / 8 = 0.1959228515625. Sum -0.9193115234375 = -1882.75 * 2^-11,
    // which __hadd rounds to -1883 * 2^-11 = -0.91943359375.
    EXPECT_EQ(exl3CodebookValue(Exl3Codebook::ThreeInst, 1), -0.91943359375f);
    // mcg, state 0: x = 0 -> 0x3b603b60, two halves 0x3B60 = (1 + 0x360/1024) / 2 = 0.921875; sum 1.84375.
    EXPECT_EQ(exl3CodebookValue(Exl3Codebook::Mcg, 0), 1.84375f);
    // mcg, state 1: x = 0xCBAC1FED -> & mask 0x8BAC0FED -> ^ 0x3b603b60 = 0xB0CC348D. 0x348D: exponent 13,
    // mantissa 0x08D = 141: (1 + 141/1024) / 4 = 0.284423828125; 0xB0CC: -(1 + 0x0CC/1024) / 8 =
    // -(1 + 204/1024) / 8 = -0.14990234375. Sum 0.134521484375 = 1102 * 2^-13, an f16.
    EXPECT_EQ(exl3CodebookValue(Exl3Codebook::Mcg, 1), 0.134521484375f);
    // mul1, state 0: byte sum 0 -> f16 0x6400 = 1024. 0x1eee = (1 + 750/1024) * 2^-8 = 1774/262144,
    // 0xc931 = -(1 + 305/1024) * 8 = -10.3828125. 1024 * 1774/262144 = 6.9296875; -10.3828125 -> -3.453125.
    EXPECT_EQ(exl3CodebookValue(Exl3Codebook::Mul1, 0), -3.453125f);
    // mul1, state 1: x = 0x83DCD12D, bytes 0x83 + 0xDC + 0xD1 + 0x2D = 131 + 220 + 209 + 45 = 605 ->
    // 1629 * 1774/262144 - 10.3828125 = 0.6410751342773438 = 1312.92 * 2^-11 -> 1313 * 2^-11 = 0.64111328125.
    EXPECT_EQ(exl3CodebookValue(Exl3Codebook::Mul1, 1), 0.64111328125f);
    EXPECT_EQ(exl3CodebookName(Exl3Codebook::ThreeInst), "3inst");
}

TEST(Exl3Codebook, EveryStateMatchesTheFormula) {
    for (const Codebook cb : {Codebook::ThreeInst, Codebook::Mcg, Codebook::Mul1}) {
        const auto& table = exl3CodebookTable(ours(cb));
        ASSERT_EQ(table.size(), 65536u);
        int mismatches = 0;
        for (std::uint32_t s = 0; s < 65536 && mismatches < 5; ++s)
            if (static_cast<double>(table[s]) != exl3ref::codebook(cb, static_cast<std::uint16_t>(s))) {
                ADD_FAILURE() << exl3CodebookName(ours(cb)) << " state " << s << ": " << table[s] << " vs "
                              << exl3ref::codebook(cb, static_cast<std::uint16_t>(s));
                ++mismatches;
            }
    }
}

TEST(Exl3Trellis, PermutationIsTheTensorCoreFragmentLayout) {
    const auto& perm = exl3TensorCorePermutation();
    std::vector<int> seen(256, 0);
    for (int s = 0; s < 256; ++s) {
        EXPECT_EQ(perm[static_cast<std::size_t>(s)], exl3ref::tilePosition(s)) << "stream position " << s;
        ++seen[perm[static_cast<std::size_t>(s)]];
    }
    for (int p = 0; p < 256; ++p) EXPECT_EQ(seen[static_cast<std::size_t>(p)], 1) << "tile element " << p;
    // Lane 0 holds rows 0, 1, 8, 9 of columns 0 and 8; lane 1 starts at row 2.
    EXPECT_EQ(perm[0], 0);
    EXPECT_EQ(perm[1], 16);
    EXPECT_EQ(perm[2], 128);
    EXPECT_EQ(perm[3], 144);
    EXPECT_EQ(perm[4], 8);
    EXPECT_EQ(perm[8], 32);
}

TEST(Exl3Trellis, StoredWordPairsAreSwappedAndReadMsbFirst) {
    // 4 bits: stored I16 words 0 and 1 form the first u32 (word 1 its high half): 0x12340000, so the
    // stream starts 1, 2, 3, 4, 0, ...; the rest of the tile is zero, so the start state is 0.
    std::vector<std::uint16_t> tile(64, 0);
    tile[1] = 0x1234;
    const auto t = exl3TileStates(tile.data(), 4);
    EXPECT_EQ(t.start, 0);
    EXPECT_EQ(t.states[0], 0x0001);
    EXPECT_EQ(t.states[1], 0x0012);
    EXPECT_EQ(t.states[2], 0x0123);
    EXPECT_EQ(t.states[3], 0x1234);
    EXPECT_EQ(t.states[4], 0x2340);
    EXPECT_EQ(t.states[7], 0x0000);
}

TEST(Exl3Trellis, TailBitingStartIsTheStateTheTileEndsIn) {
    // 3 bits, all symbols 0 but the last, 0b101 (stream bits 765..767: the low bits of u32 word 23,
    // i.e. stored I16 word 46). The register starts at 5 and shifts it out over the first symbols.
    std::vector<std::uint16_t> tile(48, 0);
    tile[46] = 5;
    const auto t = exl3TileStates(tile.data(), 3);
    EXPECT_EQ(t.start, 5);
    EXPECT_EQ(t.states[0], 40);
    EXPECT_EQ(t.states[1], 320);
    EXPECT_EQ(t.states[2], 2560);
    EXPECT_EQ(t.states[3], 20480);
    EXPECT_EQ(t.states[4], 32768);  // 5 << 15 keeps only the low bit of 0b101
    EXPECT_EQ(t.states[5], 0);
    EXPECT_EQ(t.states[254], 0);
    EXPECT_EQ(t.states[255], 5);

    std::mt19937 rng(7);
    for (int bits = 1; bits <= 8; ++bits) {
        const auto words = randomWords(rng, static_cast<std::size_t>(16 * bits));
        const auto r = exl3TileStates(words.data(), bits);
        EXPECT_EQ(r.start, r.states[255]) << bits << " bits";
        for (int s = 0; s < 256; ++s)
            ASSERT_EQ(r.states[static_cast<std::size_t>(s)], exl3ref::state(words.data(), bits, s))
                << bits << " bits, position " << s;
    }
}

TEST(Exl3Hadamard, SylvesterMatrixIsOrthogonalAndTheDecodeUndoesIt) {
    const auto h = exl3ref::hadamard(128);
    for (int i = 0; i < 128; ++i)
        for (int j = 0; j < 128; ++j) {
            double dot = 0.0;
            for (int m = 0; m < 128; ++m)
                dot += h[static_cast<std::size_t>(i * 128 + m)] * h[static_cast<std::size_t>(j * 128 + m)];
            ASSERT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-12) << i << ", " << j;
            // Sylvester's H[i][j] is (-1)^popcount(i & j) / sqrt(128).
            ASSERT_EQ(h[static_cast<std::size_t>(i * 128 + j)] > 0,
                      __builtin_popcount(static_cast<unsigned>(i & j)) % 2 == 0);
        }
    // With unit sign vectors the decode is H W_hat H: orthogonal, so it keeps the Frobenius norm, and
    // applying H on both sides again gives W_hat back.
    Exl3Linear l;
    l.inFeatures = 256;
    l.outFeatures = 128;
    l.bits = 3;
    std::mt19937 rng(11);
    l.trellis = randomWords(rng, static_cast<std::size_t>(16 * 8 * 16 * 3));
    l.suh.assign(256, 1.0f);
    l.svh.assign(128, 1.0f);
    const MatrixF inner = exl3InnerWeight(l);  // [k, n]
    const MatrixF w = exl3Dequantize(l);       // [n, k]
    // The norms in double: an f32 sum of 32768 squares is off by about 1e-6 itself, by an amount that
    // changes with the vector width the build gives Eigen (SSE2 on plain x86-64 missed 1e-6).
    EXPECT_NEAR(w.cast<double>().norm() / inner.cast<double>().norm(), 1.0, 1e-6);
    // b = blockdiag(H) * W with W = w^T [256, 128], then H W H = b * H.
    std::vector<double> b(256 * 128);
    for (int r = 0; r < 256; ++r)
        for (int c = 0; c < 128; ++c) {
            double sum = 0.0;
            for (int i = 0; i < 128; ++i)
                sum += h[static_cast<std::size_t>((r % 128) * 128 + i)] * static_cast<double>(w(c, r / 128 * 128 + i));
            b[static_cast<std::size_t>(r * 128 + c)] = sum;
        }
    double worst = 0.0;
    for (int r = 0; r < 256; ++r)
        for (int c = 0; c < 128; ++c) {
            double sum = 0.0;
            for (int j = 0; j < 128; ++j)
                sum += b[static_cast<std::size_t>(r * 128 + j)] * h[static_cast<std::size_t>(j * 128 + c)];
            worst = std::max(worst, std::abs(sum - static_cast<double>(inner(r, c))));
        }
    EXPECT_LT(worst, 2e-6);
}

// Every codebook, every bit width 1..8, several shapes: the LinearReader's weight equals the
// brute-force reference, and the inner weight equals it exactly (both are f16 values).
TEST(Exl3Codec, MatchesTheBruteForceReference) {
    const int shapes[][2] = {{128, 128}, {256, 128}, {128, 384}, {384, 256}};
    int index = 0;
    for (const Codebook cb : {Codebook::ThreeInst, Codebook::Mcg, Codebook::Mul1})
        for (int bits = 1; bits <= 8; ++bits, ++index) {
            const auto [k, n] = shapes[index % 4];
            SCOPED_TRACE(std::string(exl3CodebookName(ours(cb))) + " " + std::to_string(bits) + " bits, K " +
                         std::to_string(k) + " N " + std::to_string(n));
            const Stored s = randomLayer(k, n, bits, cb, 100u + static_cast<unsigned>(index));
            Fixture f("exl3_ref_" + std::to_string(index));
            addLayer(f, kPrefix, s);
            f.setQuantizationConfig(exl3Config());
            const auto ck = f.open();
            const LinearReader reader(ck);
            ASSERT_EQ(reader.format().format, Format::Exl3);
            const DecodedLinear d = reader.decode(kPrefix);
            EXPECT_TRUE(d.quantized);
            EXPECT_FALSE(d.partsExact);
            EXPECT_EQ(d.parts.bits, bits);
            EXPECT_LT(worstRelativeError(d.weight, s.layer), 1e-6);

            const Exl3Linear parts = readExl3Linear(ck, kPrefix, reader.format().config);
            EXPECT_EQ(parts.codebook, ours(cb));
            EXPECT_EQ(parts.bits, bits);
            const MatrixF inner = exl3InnerWeight(parts);
            const auto expected = exl3ref::inner(s.layer);
            int mismatches = 0;
            for (int r = 0; r < k && mismatches < 3; ++r)
                for (int c = 0; c < n && mismatches < 3; ++c)
                    if (static_cast<double>(inner(r, c)) != expected[static_cast<std::size_t>(r) * n + c]) {
                        ADD_FAILURE() << "inner (" << r << ", " << c << "): " << inner(r, c) << " vs "
                                      << expected[static_cast<std::size_t>(r) * n + c];
                        ++mismatches;
                    }
        }
}

TEST(Exl3Codec, OlderPackedSignBits) {
    for (const int bits : {2, 4}) {
        const Stored s = randomLayer(256, 128, bits, Codebook::ThreeInst, 300u + static_cast<unsigned>(bits), true);
        Fixture f("exl3_packed_" + std::to_string(bits));
        addLayer(f, kPrefix, s);
        f.setQuantizationConfig(exl3Config());
        const auto ck = f.open();
        EXPECT_LT(worstRelativeError(LinearReader(ck).decode(kPrefix).weight, s.layer), 1e-6);
        EXPECT_TRUE(readExl3Linear(ck, kPrefix, exl3Config()).packedSigns);
    }
}

TEST(Exl3Codec, CheckpointWithQuantizedHeadBiasAndTensorStorage) {
    const Stored q = randomLayer(128, 256, 4, Codebook::Mcg, 401u);
    const Stored head = randomLayer(128, 128, 6, Codebook::ThreeInst, 402u);
    Fixture f("exl3_model");
    addLayer(f, kPrefix, q);
    addLayer(f, "lm_head", head);
    std::vector<float> bias(256);
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
    f.addF16(kPrefix + ".bias", {256}, bias);
    f.addBF16("model.embed_tokens.weight", {4, 128}, std::vector<float>(512, 0.5f));
    f.setQuantizationConfig(exl3Config(4.25));
    const nlohmann::json qEntry = {
        {"stored_tensors", {{kPrefix + ".trellis", {{"shape", {8, 16, 64}}, {"torch_dtype", "int16"}}}}},
        {"quant_format", "exl3"},
        {"bits_per_weight", 4},
        {"mcg_multiplier", kExl3McgMultiplier}};
    const nlohmann::json headEntry = {{"quant_format", "exl3"}, {"bits_per_weight", 6}};
    auto full = exl3Config(4.25);
    full["tensor_storage"] = {{kPrefix, qEntry},
                              {"lm_head", headEntry},
                              {"model.embed_tokens", {{"stored_tensors", nlohmann::json::object()}}}};
    f.addJsonFile("quantization_config.json", full);
    const auto ck = f.open();

    const LinearReader reader(ck);
    const auto& info = reader.format();
    EXPECT_EQ(info.format, Format::Exl3);
    EXPECT_EQ(formatName(info.format), "exl3");
    EXPECT_EQ(info.variant, "0.0.5");
    EXPECT_TRUE(info.decodable);
    EXPECT_TRUE(info.config.contains("tensor_storage"));
    ASSERT_EQ(info.layers.size(), 2u);
    EXPECT_EQ(info.layers[0].ref.prefix, "lm_head");
    EXPECT_EQ(info.layers[0].bits, 6);
    EXPECT_EQ(info.layers[1].ref.prefix, kPrefix);
    EXPECT_EQ(info.layers[1].bits, 4);
    EXPECT_EQ(info.layers[1].rows, 256);
    EXPECT_EQ(info.layers[1].cols, 128);
    EXPECT_EQ(info.layers[1].summary(), "exl3 4-bit");
    EXPECT_TRUE(info.layers[1].problem.empty()) << info.layers[1].problem;
    EXPECT_FALSE(info.uniformScheme().has_value());  // 4 and 6 bits

    const auto d = reader.decode(kPrefix);
    EXPECT_LT(worstRelativeError(d.weight, q.layer), 1e-6);
    EXPECT_EQ(d.bias, bias);
    EXPECT_LT(worstRelativeError(reader.decode("lm_head").weight, head.layer), 1e-6);
}

TEST(Exl3Codec, ConfigFromQuantizationConfigJsonOrFromTensorNames) {
    const Stored q = randomLayer(128, 128, 2, Codebook::Mul1, 501u);
    {
        Fixture f("exl3_qcjson");
        addLayer(f, kPrefix, q);
        auto c = exl3Config(2.0);
        c["tensor_storage"] = {{kPrefix, {{"bits_per_weight", 2}, {"mul1_multiplier", kExl3Mul1Multiplier}}}};
        f.addJsonFile("quantization_config.json", c);
        const auto ck = f.open();
        const LinearReader reader(ck);
        EXPECT_EQ(reader.format().format, Format::Exl3);
        EXPECT_EQ(reader.format().variant, "0.0.5");
        EXPECT_LT(worstRelativeError(reader.decode(kPrefix).weight, q.layer), 1e-6);
    }
    {
        Fixture f("exl3_names");
        addLayer(f, kPrefix, q);
        const auto ck = f.open();
        const LinearReader reader(ck);
        EXPECT_EQ(reader.format().format, Format::Exl3);
        ASSERT_EQ(reader.format().layers.size(), 1u);
        EXPECT_EQ(reader.format().layers[0].bits, 2);
        EXPECT_LT(worstRelativeError(reader.decode(kPrefix).weight, q.layer), 1e-6);
    }
}

// The refusal names the tensor and says why; detect() lists the layer as unreadable instead of failing.
void expectRefused(Fixture& f, const std::string& tensor, const std::string& why) {
    const auto ck = f.open();
    const LinearReader reader(ck);
    try {
        (void)reader.decode(kPrefix);
        ADD_FAILURE() << "expected qs::Error for " << tensor;
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("'" + tensor + "'"), std::string::npos) << m;
        EXPECT_NE(m.find(why), std::string::npos) << m;
    }
    ASSERT_EQ(reader.format().layers.size(), 1u);
    EXPECT_FALSE(reader.format().layers[0].problem.empty());
}

TEST(Exl3Codec, RefusesWhatItCannotRead) {
    {
        Fixture f("exl3_k64");  // K = 64: not a multiple of 128
        f.add(kPrefix + ".trellis", "I16", {4, 8, 64}, std::vector<std::uint8_t>(4 * 8 * 64 * 2, 0));
        f.addF16(kPrefix + ".suh", {64}, std::vector<float>(64, 1.0f));
        f.addF16(kPrefix + ".svh", {128}, std::vector<float>(128, 1.0f));
        f.setQuantizationConfig(exl3Config());
        expectRefused(f, kPrefix + ".trellis", "multiples of 128");
    }
    {
        Fixture f("exl3_bits");  // 16 * bits must be 16..128
        f.add(kPrefix + ".trellis", "I16", {8, 8, 40}, std::vector<std::uint8_t>(8 * 8 * 40 * 2, 0));
        f.setQuantizationConfig(exl3Config());
        expectRefused(f, kPrefix + ".trellis", "16 * bits");
    }
    {
        Fixture f("exl3_mult");
        auto s = randomLayer(128, 128, 3, Codebook::ThreeInst, 601u);
        addLayer(f, kPrefix, s);
        f.addI32(kPrefix + ".mcg", {}, {12345});
        f.setQuantizationConfig(exl3Config());
        expectRefused(f, kPrefix + ".mcg", "0xCBAC1FED");
    }
    {
        Fixture f("exl3_nosigns");
        const auto s = randomLayer(128, 128, 3, Codebook::ThreeInst, 602u);
        f.add(kPrefix + ".trellis", "I16", {8, 8, 48}, u16Bytes(s.layer.trellis));
        f.add(kPrefix + ".suh", "F16", {128}, u16Bytes(s.suWords));
        f.setQuantizationConfig(exl3Config());
        expectRefused(f, kPrefix + ".sv", "missing");
    }
    {
        Fixture f("exl3_storage");
        addLayer(f, kPrefix, randomLayer(128, 128, 3, Codebook::ThreeInst, 603u));
        auto c = exl3Config();
        c["tensor_storage"] = {{kPrefix, {{"bits_per_weight", 4}}}};
        f.setQuantizationConfig(c);
        expectRefused(f, kPrefix + ".trellis", "bits_per_weight 4");
    }
}

}  // namespace
}  // namespace qs::formats::test
