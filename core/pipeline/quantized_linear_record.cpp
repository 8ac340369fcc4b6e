#include "qs/pipeline/quantized_linear_record.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "qs/error.h"

namespace qs::pipeline {
namespace {

// JSON has no NaN: an unmeasured value is null.
nlohmann::json number(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }
double numberFrom(const nlohmann::json& j) {
    return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}

template <typename T>
std::span<const std::byte> bytesOf(const std::vector<T>& v) {
    return std::as_bytes(std::span(v));
}

template <typename T>
void put(const TensorSink& sink, const std::string& name, io::DType dtype, const std::vector<T>& v) {
    if (!v.empty()) sink(name, dtype, {std::int64_t(v.size())}, bytesOf(v));
}

void putMatrix(const TensorSink& sink, const std::string& name, const MatrixF& m) {
    if (m.size() == 0) return;
    sink(name, io::DType::F32, {m.rows(), m.cols()}, std::as_bytes(std::span(m.data(), std::size_t(m.size()))));
}

// The part `name` of `file` copied into `out` (absent: left empty), checked for dtype and size.
template <typename T>
void get(const io::SafetensorsFile& file, const std::string& name, io::DType dtype, std::vector<T>& out) {
    const io::TensorInfo* info = file.find(name);
    if (!info) return;
    const io::TensorView view = file.view(*info);
    if (view.dtype() != dtype || view.bytes().size() % sizeof(T) != 0)
        throw Error(file.path().string() + ": tensor '" + name + "' has dtype " +
                    std::string(io::dtypeName(view.dtype())) + ", expected " + std::string(io::dtypeName(dtype)));
    out.resize(view.bytes().size() / sizeof(T));
    std::memcpy(out.data(), view.bytes().data(), view.bytes().size());
}

void getMatrix(const io::SafetensorsFile& file, const std::string& name, MatrixF& out) {
    const io::TensorInfo* info = file.find(name);
    if (!info) return;
    const io::TensorView view = file.view(*info);
    if (view.dtype() != io::DType::F32 || view.shape().size() != 2)
        throw Error(file.path().string() + ": tensor '" + name + "' is not a rank-2 F32 matrix");
    out.resize(view.shape()[0], view.shape()[1]);
    std::memcpy(out.data(), view.bytes().data(), view.bytes().size());
}

// Every array part of a linear with its tensor suffix and dtype: the one list writing and reading walk.
template <typename Linear, typename Visit>
void forEachPart(Linear& q, Visit&& visit) {
    visit("codes", io::DType::U8, q.codes);
    visit("scales", io::DType::F32, q.scales);
    visit("zeros", io::DType::F32, q.zeros);
    visit("g_idx", io::DType::I32, q.gIdx);
    visit("input_scales", io::DType::F32, q.inputScales);
    visit("scale_codes", io::DType::U8, q.scaleCodes);
    visit("scale_scales", io::DType::F32, q.scaleScales);
    visit("trellis_starts", io::DType::U32, q.trellis.starts);
    visit("blocks", io::DType::U8, q.blocks);
    visit("input_sum_squares", io::DType::F32, q.inputSumSquares);
}

void require(bool ok, const io::SafetensorsFile& file, const std::string& prefix, const std::string& what) {
    if (!ok) throw Error(file.path().string() + ": linear '" + prefix + "': " + what);
}

}  // namespace

nlohmann::json writeQuantizedLinear(const quant::QuantizedLinear& q, const std::string& prefix,
                                    const TensorSink& sink) {
    forEachPart(q, [&](const char* part, io::DType dtype, const auto& value) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, MatrixF>)
            putMatrix(sink, prefix + "." + part, value);
        else
            put(sink, prefix + "." + part, dtype, value);
    });
    return {{"method", int(q.method)},
            {"code_kind", int(q.codeKind)},
            {"rows", q.rows},
            {"cols", q.cols},
            {"bits", q.bits},
            {"group_size", q.groupSize},
            {"symmetric", q.symmetric},
            {"block_rows", q.blockRows},
            {"block_cols", q.blockCols},
            {"global_scale", q.globalScale},
            {"scale_offset", q.scaleOffset},
            {"trellis", {q.trellis.L, q.trellis.K, q.trellis.groupSize, q.trellis.rotationSeed}},
            {"input", {int(q.input.format), q.input.scale}},
            {"cache_scale", q.cacheScale},
            {"ggml_type", int(q.ggmlType)},
            {"input_count", q.inputCount},
            {"output_error", number(q.outputError)},
            {"gptq_loss", number(q.gptqLoss)},
            {"output_mse", number(q.outputMse)},
            {"damp_percent", number(q.dampPercent)},
            {"seconds", q.seconds}};
}

quant::QuantizedLinear readQuantizedLinear(const nlohmann::json& h, const io::SafetensorsFile& file,
                                           const std::string& prefix) {
    quant::QuantizedLinear q;
    try {
        q.method = quant::Method(h.at("method").get<int>());
        q.codeKind = quant::CodeKind(h.at("code_kind").get<int>());
        q.rows = h.at("rows").get<std::int64_t>();
        q.cols = h.at("cols").get<std::int64_t>();
        q.bits = h.at("bits").get<int>();
        q.groupSize = h.at("group_size").get<int>();
        q.symmetric = h.at("symmetric").get<bool>();
        q.blockRows = h.at("block_rows").get<int>();
        q.blockCols = h.at("block_cols").get<int>();
        q.globalScale = h.at("global_scale").get<float>();
        q.scaleOffset = h.at("scale_offset").get<float>();
        const auto& t = h.at("trellis");
        q.trellis.L = t.at(0).get<int>();
        q.trellis.K = t.at(1).get<int>();
        q.trellis.groupSize = t.at(2).get<int>();
        q.trellis.rotationSeed = t.at(3).get<std::uint64_t>();
        q.input.format = quant::ActivationFormat(h.at("input").at(0).get<int>());
        q.input.scale = h.at("input").at(1).get<float>();
        q.cacheScale = h.at("cache_scale").get<float>();
        q.ggmlType = io::GgmlType(h.at("ggml_type").get<int>());
        q.inputCount = h.at("input_count").get<std::int64_t>();
        q.outputError = numberFrom(h.at("output_error"));
        q.gptqLoss = numberFrom(h.at("gptq_loss"));
        q.outputMse = numberFrom(h.at("output_mse"));
        q.dampPercent = numberFrom(h.at("damp_percent"));
        q.seconds = h.at("seconds").get<double>();
    } catch (const nlohmann::json::exception& e) {
        throw Error(file.path().string() + ": linear '" + prefix + "': bad record header: " + e.what());
    }
    forEachPart(q, [&](const char* part, io::DType dtype, auto& value) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, MatrixF>)
            getMatrix(file, prefix + "." + part, value);
        else
            get(file, prefix + "." + part, dtype, value);
    });
    require(q.rows > 0 && q.cols > 0, file, prefix, "empty shape");
    const bool ggml = q.codeKind == quant::CodeKind::GgmlBlocks;
    require(!(ggml ? q.blocks : q.codes).empty(), file, prefix,
            ggml ? "its ggml blocks are missing" : "its codes are missing");
    return q;
}

}  // namespace qs::pipeline
