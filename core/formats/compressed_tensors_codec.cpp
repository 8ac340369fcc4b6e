// compressed-tensors (llm-compressor), docs/formats/compressed-tensors.md. The tensors say which compressor wrote
// a module; the config_groups scheme that targets it says bits, symmetry, strategy and group size:
//   pack-quantized        weight_packed I32 [N, ceil(K*b/32)], weight_scale, weight_shape I64 [2],
//                         weight_zero_point I32 (asym, packed along N), weight_g_idx I32 [K] (actorder)
//                         W = (field - zero field) * scale, zero field = 2^(b-1) when symmetric
//   nvfp4-pack-quantized  weight_packed U8 [N, K/2], weight_scale F8_E4M3 [N, K/16],
//                         weight_global_scale F32 [1] (a DIVISOR): W = e2m1 * (scale / global)
//   mxfp4-pack-quantized  weight_packed U8 [N, K/2], weight_scale U8 E8M0 [N, K/32]
//   float-quantized       weight F8_E4M3 [N, K], weight_scale per tensor/channel/group/block
//   int-quantized         weight I8 [N, K], weight_scale, weight_zero_point when asymmetric
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "qs/error.h"

#include "bit_fields.h"
#include "codecs.h"
#include "fp4_weight.h"
#include "fp8_weight.h"
#include "module_match.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

struct CtArgs {
    int bits = 8;
    std::string type = "int";
    bool symmetric = true;
    int groupSize = -1;
    std::string strategy;  // tensor, channel, group, block, tensor_group
    std::optional<std::pair<int, int>> block;
    bool actOrder = false;  // actorder "group": a weight_g_idx holds the permutation
};

bool targets(const nlohmann::json& scheme, const std::string& module) {
    const auto it = scheme.find("targets");
    if (it == scheme.end() || !it->is_array()) return false;
    for (const auto& t : *it) {
        if (!t.is_string()) continue;
        const auto target = t.get<std::string>();
        // Class names other than Linear cannot be told from tensors; every module read here is a linear.
        if (target == "Linear" || target == module) return true;
        if (target.starts_with("re:") && regexMatchesStart(std::string_view(target).substr(3), module)) return true;
    }
    return false;
}

// block_structure: [rows, cols] of positive integers, or the older "128x128" string.
std::pair<int, int> parseBlockStructure(const nlohmann::json& b, const std::string& at) {
    const std::string where = at + ": 'block_structure'";
    const io::IntRange positive{1, 1 << 20};
    nlohmann::json pair = b;
    if (b.is_string()) {
        const auto& text = b.get_ref<const std::string&>();
        const auto x = text.find('x');
        pair = x == std::string::npos ? nlohmann::json(text) : nlohmann::json{text.substr(0, x), text.substr(x + 1)};
    }
    if (!pair.is_array() || pair.size() != 2)
        throw ConfigError(where + " is " + b.dump() + ", expected two integers [rows, cols]");
    try {
        return {static_cast<int>(io::jsonInteger(pair[0], where + "[0]", positive)),
                static_cast<int>(io::jsonInteger(pair[1], where + "[1]", positive))};
    } catch (const Error& e) {
        throw ConfigError(e.what());
    }
}

// QuantizationArgs as compressed-tensors validates them (quant_args.py, validate_model_after): the
// strategy is inferred from group_size when absent; group and tensor_group need group_size > 0;
// block needs block_structure and block_structure needs block.
CtArgs parseArgs(const nlohmann::json& w, const std::string& at) {
    CtArgs a;
    a.bits = jsonInt(w, "num_bits", 8, {1, 8}, at);
    a.type = lowerCase(jsonString(w, "type", "int", at));
    a.symmetric = jsonBool(w, "symmetric", true, at);
    a.groupSize = jsonInt(w, "group_size", -2, {-1, std::numeric_limits<std::int32_t>::max()}, at);
    a.strategy = lowerCase(jsonString(w, "strategy", "", at));
    if (a.strategy.empty()) a.strategy = a.groupSize == -2 ? "tensor" : a.groupSize > 0 ? "group" : "channel";
    if ((a.strategy == "group" || a.strategy == "tensor_group") && a.groupSize <= 0)
        throw ConfigError(at + ": strategy '" + a.strategy + "' needs a positive 'group_size'");
    if (a.groupSize == -2) a.groupSize = -1;
    if (const auto it = w.find("block_structure"); it != w.end() && !it->is_null())
        a.block = parseBlockStructure(*it, at);
    if ((a.strategy == "block") != a.block.has_value())
        throw ConfigError(at + (a.block ? ": 'block_structure' needs strategy 'block'"
                                        : ": strategy 'block' needs 'block_structure'"));
    // ActivationOrdering: true, "group" and its alias "dynamic" store weight_g_idx; "weight" (alias
    // "static") changes only the calibration.
    const auto actorder = w.find("actorder");
    if (actorder != w.end() && actorder->is_boolean())
        a.actOrder = actorder->get<bool>();
    else if (const auto order = lowerCase(jsonString(w, "actorder", "", at)); !order.empty()) {
        if (order != "group" && order != "dynamic" && order != "weight" && order != "static")
            throw ConfigError(at + ": 'actorder' is '" + order + "', expected group, weight, dynamic or static");
        a.actOrder = order == "group" || order == "dynamic";
    }
    return a;
}

// The one reading of a group's scale layout, for every compressed-tensors layout that stores a
// scale grid (pack-quantized, int-quantized and float-quantized alike).
ScaleHint scaleHintOf(const CtArgs& a) {
    ScaleHint hint;
    if (a.strategy == "group" || a.strategy == "tensor_group") hint.groupSize = a.groupSize;
    if (a.strategy == "block") hint.block = a.block;
    return hint;
}

// The weights args of the first config group that targets `module` (a lone group applies to all).
CtArgs argsFor(const nlohmann::json& config, const std::string& module) {
    const auto groups = config.find("config_groups");
    if (groups == config.end() || !groups->is_object() || groups->empty())
        throw ConfigError("has no 'config_groups' (needed for " + module + ")");
    const nlohmann::json* chosen = groups->size() == 1 ? &groups->begin().value() : nullptr;
    std::string chosenName = groups->size() == 1 ? groups->begin().key() : "";
    for (const auto& [name, scheme] : groups->items())
        if (targets(scheme, module)) {
            chosen = &scheme;
            chosenName = name;
            break;
        }
    if (!chosen) throw ConfigError("no config group targets " + module);
    const auto w = chosen->find("weights");
    if (w == chosen->end() || !w->is_object())
        throw ConfigError("config group '" + chosenName + "' (for " + module + ") has no 'weights' object");
    return parseArgs(*w, "config_groups." + chosenName + ".weights");
}

enum class CtLayout { PackInt, Nvfp4, Mxfp4, Float, NaiveInt };

CtLayout storedLayout(const io::Checkpoint& ck, const std::string& p) {
    if (hasTensor(ck, p + ".weight_packed")) {
        const auto packed = ck.tensor(p + ".weight_packed");
        if (packed.dtype() == io::DType::I32) return CtLayout::PackInt;
        requireDtype(ck, packed, {io::DType::U8, io::DType::I32});
        return hasTensor(ck, p + ".weight_global_scale") ? CtLayout::Nvfp4 : CtLayout::Mxfp4;
    }
    const auto w = requireTensor(ck, p + ".weight", "compressed-tensors");
    requireDtype(ck, w, {io::DType::F8_E4M3, io::DType::I8});
    return w.dtype() == io::DType::F8_E4M3 ? CtLayout::Float : CtLayout::NaiveInt;
}

// The layout the tensors are stored in, which must be what the config group says (type and
// num_bits): an FP8 weight swapped to I8 would otherwise be read as int-quantized.
CtLayout layoutOf(const io::Checkpoint& ck, const std::string& p, const CtArgs& a) {
    const CtLayout layout = storedLayout(ck, p);
    const bool intLayout = layout == CtLayout::PackInt || layout == CtLayout::NaiveInt;
    const int bits = layout == CtLayout::Nvfp4 || layout == CtLayout::Mxfp4 ? 4 : 8;
    if (intLayout != (a.type == "int") || (layout != CtLayout::PackInt && a.bits != bits)) {
        const std::string name = p + (hasTensor(ck, p + ".weight_packed") ? ".weight_packed" : ".weight");
        failTensor(ck, name,
                   "is stored as " + std::string(intLayout ? "integer" : "float") +
                       (layout == CtLayout::PackInt ? "" : " " + std::to_string(bits) + "-bit") +
                       " codes, but its config group says type '" + a.type + "', num_bits " + std::to_string(a.bits));
    }
    return layout;
}

// [N, K] from weight_shape (I64/I32 [2]); packed layouts lose K's exact value otherwise, so the
// pack-quantized compressor always writes it (`required`). K is at most `maxCols` (the packed row's
// bits), which also keeps every size computed from it far from overflow.
std::pair<std::int64_t, std::int64_t> weightShape(const io::Checkpoint& ck, const std::string& p, std::int64_t rows,
                                                  std::int64_t colsGuess, std::int64_t maxCols, bool required) {
    if (!hasTensor(ck, p + ".weight_shape")) {
        if (required)
            requireTensor(ck, p + ".weight_shape", "compressed-tensors pack-quantized (the packed rows do not say K)");
        return {rows, colsGuess};
    }
    const auto s = ck.tensor(p + ".weight_shape");
    requireDtype(ck, s, {io::DType::I64, io::DType::I32});
    requireShape(ck, s, {2}, "[out_features, in_features]");
    std::int64_t v[2] = {0, 0};
    if (s.dtype() == io::DType::I64) {
        std::memcpy(v, s.bytes().data(), 16);
    } else {
        std::int32_t v32[2];
        std::memcpy(v32, s.bytes().data(), 8);
        v[0] = v32[0], v[1] = v32[1];
    }
    if (v[0] != rows || v[1] <= 0 || v[1] > maxCols)
        failTensor(ck, s.name(),
                   "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "] does not fit the packed weight's " +
                       std::to_string(rows) + " rows of at most " + std::to_string(maxCols) + " values");
    return {v[0], v[1]};
}

// --- pack-quantized ---------------------------------------------------------------------------

// A row of b-bit fields: dense bit stream (compressed-tensors >= 2026-05, and 2/4/8-bit always) or
// 32/b whole fields per word (0.12.x for 3/5/6/7 bits). The stored width tells which.
struct FieldReader {
    int bits = 4;
    bool dense = true;
    std::uint32_t at(const std::uint32_t* words, std::size_t stride, std::int64_t i) const {
        if (dense) return bitField(words, stride, static_cast<std::uint64_t>(i * bits), bits);
        const int perWord = 32 / bits;
        return (words[static_cast<std::size_t>(i / perWord) * stride] >> (bits * (i % perWord))) & ((1u << bits) - 1u);
    }
};

FieldReader fieldReaderFor(const io::Checkpoint& ck, const io::TensorView& t, std::int64_t count, std::int64_t stored,
                           int bits) {
    const std::int64_t dense = ceilDiv(count * bits, 32), legacy = ceilDiv(count, 32 / bits);
    if (stored == dense) return {bits, true};
    if (stored == legacy) return {bits, false};
    failTensor(ck, t.name(),
               "shape " + shapeText(t.shape()) + " cannot hold " + std::to_string(count) + " " + std::to_string(bits) +
                   "-bit values per line (expected " + std::to_string(dense) + " words)");
}

struct PackedInt {
    std::int64_t rows = 0, cols = 0, groups = 0;
    FieldReader fields;
    io::TensorView packed;
    ScaleGrid grid;
    std::vector<std::int32_t> gIdx;  // empty unless weight_g_idx
};

PackedInt openPackInt(const io::Checkpoint& ck, const std::string& p, const CtArgs& a) {
    const auto packed = requireTensor(ck, p + ".weight_packed", "compressed-tensors pack-quantized");
    requireRank(ck, packed, 2);
    const auto [rows, cols] =
        weightShape(ck, p, packed.shape()[0], packed.shape()[1] * 32 / a.bits, packed.shape()[1] * 32, true);
    PackedInt l{rows, cols, 0, fieldReaderFor(ck, packed, cols, packed.shape()[1], a.bits), packed, {}, {}};
    l.grid =
        readScaleGrid(ck, requireTensor(ck, p + ".weight_scale", "compressed-tensors"), rows, cols, scaleHintOf(a));
    l.groups = l.grid.scales.cols();
    if (a.actOrder != hasTensor(ck, p + ".weight_g_idx")) {
        if (a.actOrder)
            requireTensor(ck, p + ".weight_g_idx", "the config's actorder 'group' (the act-order permutation)");
        failTensor(ck, p + ".weight_g_idx",
                   "is stored, but the config's actorder is not 'group', so readers ignore it");
    }
    if (a.actOrder) {
        const auto g = ck.tensor(p + ".weight_g_idx");
        requireDtype(ck, g, {io::DType::I32, io::DType::I64});
        requireShape(ck, g, {cols}, "one group index per input");
        for (const float v : g.toF32()) {
            if (v < 0 || v >= static_cast<float>(l.groups))
                failTensor(ck, g.name(),
                           "group index " + std::to_string(v) + " outside 0.." + std::to_string(l.groups - 1));
            l.gIdx.push_back(static_cast<std::int32_t>(v));
        }
    }
    return l;
}

// Zero points as unsigned fields [rows, groups] (the signed zero + 2^(b-1)).
MatrixF readZeroPoints(const io::Checkpoint& ck, const std::string& p, const CtArgs& a, const PackedInt& l) {
    const float offset = static_cast<float>(1 << (a.bits - 1));
    const auto rowsOfGrid = l.grid.scales.rows();
    if (a.symmetric) return MatrixF::Constant(rowsOfGrid, l.groups, offset);
    const auto zp = requireTensor(ck, p + ".weight_zero_point", "an asymmetric compressed-tensors weight");
    requireDtype(ck, zp,
                 {io::DType::I32, io::DType::I8, io::DType::I64, io::DType::F32, io::DType::F16, io::DType::BF16});
    if (zp.numel() == rowsOfGrid * l.groups &&
        (zp.dtype() != io::DType::I32 || ceilDiv(rowsOfGrid * a.bits, 32) != zp.shape()[0])) {
        // Unpacked signed zero points (tensor strategy, or writers that do not pack them).
        const auto v = zp.toF32();
        MatrixF z(rowsOfGrid, l.groups);
        for (Eigen::Index i = 0; i < z.size(); ++i) z.data()[i] = v[static_cast<std::size_t>(i)] + offset;
        return z;
    }
    requireRank(ck, zp, 2);
    if (zp.shape()[1] != l.groups)
        failTensor(ck, zp.name(),
                   "shape " + shapeText(zp.shape()) + ", expected " + std::to_string(l.groups) +
                       " columns (one per scale group)");
    const auto reader = fieldReaderFor(ck, zp, rowsOfGrid, zp.shape()[0], a.bits);
    const auto words = readWords(zp);
    MatrixF z(rowsOfGrid, l.groups);
    for (std::int64_t g = 0; g < l.groups; ++g)
        for (std::int64_t r = 0; r < rowsOfGrid; ++r)
            z(r, g) = static_cast<float>(reader.at(words.data() + g, static_cast<std::size_t>(l.groups), r));
    return z;
}

DecodedLinear decodePackInt(const io::Checkpoint& ck, const LinearRef& ref, const CtArgs& a) {
    auto l = openPackInt(ck, ref.prefix, a);
    const MatrixF zeros = readZeroPoints(ck, ref.prefix, a, l);
    const auto words = readWords(l.packed);
    const auto stride = l.packed.shape()[1];
    DecodedLinear d;
    d.ref = ref;
    d.quantized = true;
    d.weight.resize(l.rows, l.cols);
    const int br = l.grid.blockRows, bc = l.grid.blockCols;
    auto& q = d.parts;
    // Method Rtn: the format does not record the algorithm (GPTQ, RTN, ...).
    q = quant::QuantizedLinear::intBlocks(quant::Method::Rtn, l.rows, l.cols, a.bits, a.symmetric,
                                          l.grid.granularity == "group" ? bc : -1, br, bc);
    q.codes.resize(static_cast<std::size_t>(l.rows * l.cols));
    for (std::int64_t r = 0; r < l.rows; ++r)
        for (std::int64_t c = 0; c < l.cols; ++c) {
            const auto code = l.fields.at(words.data() + r * stride, 1, c);
            const auto g = l.gIdx.empty() ? c / bc : l.gIdx[static_cast<std::size_t>(c)];
            q.codes[static_cast<std::size_t>(r * l.cols + c)] = static_cast<std::uint8_t>(code);
            d.weight(r, c) = (static_cast<float>(code) - zeros(r / br, g)) * l.grid.scales(r / br, g);
        }
    q.scales = std::move(l.grid.scales);
    q.zeros = zeros;
    q.gIdx = std::move(l.gIdx);
    d.bias = readBias(ck, ref, l.rows);
    return d;
}

// --- FP4 ----------------------------------------------------------------------------------------

Fp4Blocks openFp4(const io::Checkpoint& ck, const std::string& p, CtLayout layout) {
    const auto packed = requireTensor(ck, p + ".weight_packed", "compressed-tensors FP4");
    requireDtype(ck, packed, {io::DType::U8});
    requireRank(ck, packed, 2);
    const auto [rows, cols] =
        weightShape(ck, p, packed.shape()[0], packed.shape()[1] * 2, packed.shape()[1] * 2, false);
    const int block = layout == CtLayout::Nvfp4 ? 16 : 32;
    requireShape(ck, packed, {rows, ceilDiv(cols, 2)}, "two FP4 codes per byte");
    if (cols % block != 0)
        failTensor(ck, packed.name(),
                   std::to_string(cols) + " inputs are not a multiple of the block size " + std::to_string(block));
    const auto scale = requireTensor(ck, p + ".weight_scale", "compressed-tensors FP4");
    requireShape(ck, scale, {rows, cols / block}, "one scale per " + std::to_string(block) + " inputs");
    Fp4Blocks b;
    b.packed = bytePointer(packed);
    b.rows = rows;
    b.cols = cols;
    b.blockSize = block;
    if (layout == CtLayout::Nvfp4) {
        requireDtype(ck, scale, {io::DType::F8_E4M3});
        const auto global = ck.tensor(p + ".weight_global_scale");
        requireDtype(ck, global, {io::DType::F32, io::DType::F16, io::DType::BF16});
        if (!isScalar(global))
            failTensor(ck, global.name(), "shape " + shapeText(global.shape()) + ", expected one value");
        const float gs = global.toF32()[0];
        // A divisor: 0 makes every weight infinite, Inf or NaN makes them all 0 or NaN.
        if (!std::isfinite(gs) || gs == 0.0f)
            failTensor(ck, global.name(),
                       "is " + std::to_string(gs) +
                           ", but the global scale divides every block scale: it must be "
                           "finite and non-zero");
        b.storedScales = scale.toMatrix();
        // The global scale divides (forward_helpers.py); decoded as its reciprocal times the block
        // scale, as every FP4 weight is (fp4_weight.h): the last bit may differ from the division.
        b.globalScale = 1.0f / gs;
        b.method = quant::Method::Nvfp4;
    } else {
        requireDtype(ck, scale, {io::DType::U8, io::DType::F8_E8M0});
        b.storedScales.resize(rows, cols / block);
        const std::uint8_t* e = bytePointer(scale);
        for (Eigen::Index i = 0; i < b.storedScales.size(); ++i) b.storedScales.data()[i] = io::e8m0ToF32(e[i]);
        b.method = quant::Method::Mxfp4;
    }
    return b;
}

// --- float-quantized and int-quantized ------------------------------------------------------------

ScaleGrid openScales(const io::Checkpoint& ck, const std::string& p, const CtArgs& a, std::int64_t rows,
                     std::int64_t cols) {
    return readScaleGrid(ck, requireTensor(ck, p + ".weight_scale", "compressed-tensors"), rows, cols, scaleHintOf(a));
}

DecodedLinear decodeNaiveInt(const io::Checkpoint& ck, const LinearRef& ref, const CtArgs& a) {
    const auto w = ck.tensor(ref.prefix + ".weight");
    requireRank(ck, w, 2);
    const std::int64_t rows = w.shape()[0], cols = w.shape()[1];
    auto grid = openScales(ck, ref.prefix, a, rows, cols);
    MatrixF zeros = MatrixF::Constant(grid.scales.rows(), grid.scales.cols(), 128.0f);
    if (!a.symmetric) {
        const auto zp = requireTensor(ck, ref.prefix + ".weight_zero_point", "an asymmetric int-quantized weight");
        if (zp.numel() != zeros.size())
            failTensor(ck, zp.name(),
                       "shape " + shapeText(zp.shape()) + " does not match the scales' " +
                           std::to_string(zeros.size()) + " values");
        const auto v = zp.toF32();
        for (Eigen::Index i = 0; i < zeros.size(); ++i) zeros.data()[i] += v[static_cast<std::size_t>(i)];
    }
    const auto* q8 = reinterpret_cast<const std::int8_t*>(bytePointer(w));
    DecodedLinear d;
    d.ref = ref;
    d.quantized = true;
    d.weight.resize(rows, cols);
    auto& q = d.parts;
    q = quant::QuantizedLinear::intBlocks(quant::Method::Rtn, rows, cols, 8, a.symmetric,
                                          grid.granularity == "group" ? grid.blockCols : -1, grid.blockRows,
                                          grid.blockCols);
    q.codes.resize(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
            const int code = q8[r * cols + c] + 128;  // unsigned code; zeros carry the same +128
            q.codes[static_cast<std::size_t>(r * cols + c)] = static_cast<std::uint8_t>(code);
            const auto gr = r / grid.blockRows, gc = c / grid.blockCols;
            d.weight(r, c) = (static_cast<float>(code) - zeros(gr, gc)) * grid.scales(gr, gc);
        }
    q.scales = std::move(grid.scales);
    q.zeros = std::move(zeros);
    d.bias = readBias(ck, ref, rows);
    return d;
}

class CompressedTensorsCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "compressed-tensors"; }

    std::vector<LinearRef> linears(const io::Checkpoint& ck) const override {
        auto refs = refsWithSuffix(ck, ".weight_packed");
        const auto quantizedWeight = [&ck](const io::CheckpointTensor& t) {
            const auto d = t.info->dtype;
            if (d != io::DType::F8_E4M3 && d != io::DType::I8) return false;
            const auto& n = t.info->name;
            return hasTensor(ck, n.substr(0, n.size() - 7) + ".weight_scale");
        };
        for (auto& r : refsWithSuffix(ck, ".weight", quantizedWeight)) refs.push_back(std::move(r));
        std::sort(refs.begin(), refs.end(), [](const LinearRef& a, const LinearRef& b) { return a.prefix < b.prefix; });
        return refs;
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json& config,
                            const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto a = argsFor(config, ref.prefix);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "compressed-tensors";
        info.bits = a.bits;
        info.symmetric = a.symmetric;
        info.actOrder = hasTensor(ck, ref.prefix + ".weight_g_idx");
        switch (const auto layout = layoutOf(ck, ref.prefix, a)) {
            case CtLayout::PackInt: {
                const auto l = openPackInt(ck, ref.prefix, a);
                fillGrid(info, "int", l.rows, l.cols, l.grid);
                break;
            }
            case CtLayout::Nvfp4:
            case CtLayout::Mxfp4: {
                const auto b = openFp4(ck, ref.prefix, layout);
                info.scheme = layout == CtLayout::Nvfp4 ? "nvfp4" : "mxfp4";
                info.bits = 4;
                info.groupSize = b.blockSize;
                info.granularity = "group";
                info.rows = b.rows;
                info.cols = b.cols;
                break;
            }
            case CtLayout::Float:
            case CtLayout::NaiveInt: {
                const auto w = ck.tensor(ref.prefix + ".weight");
                requireRank(ck, w, 2);
                const auto grid = openScales(ck, ref.prefix, a, w.shape()[0], w.shape()[1]);
                fillGrid(info, layout == CtLayout::Float ? "fp8" : "int", w.shape()[0], w.shape()[1], grid);
                info.bits = 8;
                break;
            }
        }
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json& config, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto a = argsFor(config, ref.prefix);
        switch (const auto layout = layoutOf(ck, ref.prefix, a)) {
            case CtLayout::PackInt: return decodePackInt(ck, ref, a);
            case CtLayout::Nvfp4:
            case CtLayout::Mxfp4: {
                auto d = decodeFp4Blocks(ref, openFp4(ck, ref.prefix, layout));
                d.bias = readBias(ck, ref, d.weight.rows());
                return d;
            }
            case CtLayout::Float: {
                const auto w = ck.tensor(ref.prefix + ".weight");
                requireFp8Weight(ck, w);
                return decodeScaledFp8(ck, ref, w, openScales(ck, ref.prefix, a, w.shape()[0], w.shape()[1]));
            }
            case CtLayout::NaiveInt: return decodeNaiveInt(ck, ref, a);
        }
        throw Error(ref.prefix + ": unknown compressed-tensors layout");
    }

private:
    static void fillGrid(LayerQuantInfo& info, const char* scheme, std::int64_t rows, std::int64_t cols,
                         const ScaleGrid& g) {
        info.scheme = scheme;
        info.rows = rows;
        info.cols = cols;
        info.granularity = g.granularity;
        info.blockRows = g.blockRows;
        info.groupSize = g.granularity == "group" || g.granularity == "block" ? g.blockCols : -1;
    }
};

}  // namespace

const LinearCodec& compressedTensorsCodec() {
    static const CompressedTensorsCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
