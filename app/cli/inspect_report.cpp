#include "inspect_report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <sstream>

#include "qs/io/gguf_names.h"
#include "qs/io/llama_ftype.h"
#include "qs/message_text.h"

#include "human_format.h"
#include "text_table.h"

namespace qs::cli {
namespace {

constexpr int kLabelWidth = 15;

void field(std::ostream& out, const std::string& label, const std::string& value) {
    out << label << std::string(static_cast<std::size_t>(kLabelWidth) - label.size(), ' ') << value << '\n';
}

std::string orUnknown(const std::string& value) { return value.empty() ? "unknown" : value; }
std::string orUnknown(int value) { return value > 0 ? std::to_string(value) : "unknown"; }

std::string percent(std::uint64_t part, std::uint64_t whole) {
    std::array<char, 32> buffer{};
    std::snprintf(buffer.data(), buffer.size(), "%5.1f %%",
                  whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return buffer.data();
}

std::uint64_t totalBytes(const io::CheckpointSummary& summary) {
    std::uint64_t total = 0;
    for (const auto& [dtype, bytes] : summary.bytesByDtype) total += bytes;
    return total;
}

// One line per dtype, names and sizes aligned, e.g. "BF16   13.48 GiB   99.9 %".
void dtypeLines(std::ostream& out, const io::CheckpointSummary& summary) {
    const std::uint64_t total = totalBytes(summary);
    std::size_t nameWidth = 0;
    std::size_t sizeWidth = 0;
    for (const auto& [dtype, bytes] : summary.bytesByDtype) {
        nameWidth = std::max(nameWidth, dtype.size());
        sizeWidth = std::max(sizeWidth, formatBytes(bytes).size());
    }
    std::string label = "Dtypes";
    if (summary.bytesByDtype.empty()) field(out, label, "none");
    for (const auto& [dtype, bytes] : summary.bytesByDtype) {
        const std::string size = formatBytes(bytes);
        field(out, label,
              dtype + std::string(nameWidth - dtype.size() + 2 + sizeWidth - size.size(), ' ') + size + "  " +
                  percent(bytes, total));
        label.clear();
    }
}

// "224 linears: 196 int4 g128 act-order sym, 28 int8 g128 sym" — how many share each scheme.
void quantizedLines(std::ostream& out, const std::vector<formats::LayerQuantInfo>& linears) {
    if (linears.empty()) return;
    std::map<std::string, int> schemes;
    for (const auto& l : linears) ++schemes[l.summary()];
    std::string text = std::to_string(linears.size()) + (linears.size() == 1 ? " linear:" : " linears:");
    const char* separator = " ";
    for (const auto& [scheme, count] : schemes) {
        text += separator + std::to_string(count) + " " + scheme;
        separator = ", ";
    }
    field(out, "Quantized", text);
}

void layerLines(std::ostream& out, const std::vector<formats::LayerQuantInfo>& linears) {
    TextTable table({{"linear", TextTable::Align::Left},
                     {"bits", TextTable::Align::Right},
                     {"group", TextTable::Align::Right},
                     {"act-order", TextTable::Align::Left},
                     {"sym", TextTable::Align::Left},
                     {"shape", TextTable::Align::Left},
                     {"scheme", TextTable::Align::Left}});
    for (const auto& l : linears)
        table.addRow({l.ref.label(), std::to_string(l.bits), std::to_string(l.groupSize), l.actOrder ? "yes" : "no",
                      l.symmetric ? "yes" : "no", formatShape({l.rows, l.cols}), l.summary()});
    out << '\n';
    table.print(out);
}

std::string twoDecimals(double v) {
    std::array<char, 32> buffer{};
    std::snprintf(buffer.data(), buffer.size(), "%.2f", v);
    return buffer.data();
}

// The container, the ggml types with their counts and bits per weight, and the metadata.
void ggufLines(std::ostream& out, const GgufInspection& g) {
    std::string format = "GGUF v" + std::to_string(g.version) + " (llama.cpp)";
    if (!g.fileType.empty()) format += ", file type " + g.fileType;
    field(out, "Format", format + ", alignment " + std::to_string(g.alignment));
    TextTable types({{"type", TextTable::Align::Left},
                     {"tensors", TextTable::Align::Right},
                     {"weights", TextTable::Align::Right},
                     {"size", TextTable::Align::Right},
                     {"bits/weight", TextTable::Align::Right}});
    for (const auto& t : g.types)
        types.addRow({t.type, std::to_string(t.tensors), formatCount(t.elements), formatBytes(t.bytes),
                      twoDecimals(t.bitsPerWeight())});
    field(out, "Tensor types",
          std::to_string(g.types.size()) + (g.types.size() == 1 ? " type; " : " types; ") +
              twoDecimals(g.decoderLinears.bitsPerWeight()) + " bits per weight of the decoder's linears, " +
              twoDecimals(g.allTensors.bitsPerWeight()) + " over every tensor");
    std::ostringstream table;
    types.print(table);
    std::istringstream lines(table.str());
    for (std::string line; std::getline(lines, line);) out << std::string(kLabelWidth, ' ') << line << '\n';
    field(out, "Metadata", std::to_string(g.metadata.size()) + " keys");
    std::size_t keyWidth = 0;
    for (const auto& [key, value] : g.metadata) keyWidth = std::max(keyWidth, key.size());
    for (const auto& [key, value] : g.metadata) {
        const std::string shown = value.size() > 80 ? value.substr(0, 77) + "..." : value;
        out << std::string(kLabelWidth, ' ') << key << std::string(keyWidth - key.size() + 2, ' ') << shown << '\n';
    }
}

// One line per kind of activation / KV-cache scale: how many, their range, and where the largest sits
// (an outlier layer shows as a maximum far above the rest).
void servingScaleLines(std::ostream& out, const std::vector<formats::ServingScale>& scales) {
    const std::pair<const char*, const char*> kinds[] = {{"input_scale", "Input scales"},
                                                         {"input_global_scale", "Input globals"},
                                                         {"k_scale", "KV k_scale"},
                                                         {"v_scale", "KV v_scale"}};
    for (const auto& [kind, label] : kinds) {
        const formats::ServingScale* lo = nullptr;
        const formats::ServingScale* hi = nullptr;
        std::size_t count = 0;
        for (const auto& s : scales) {
            if (s.kind != kind) continue;
            ++count;
            if (!lo || s.value < lo->value) lo = &s;
            if (!hi || s.value > hi->value) hi = &s;
        }
        if (count == 0) continue;
        std::ostringstream line;
        line << count << " tensors, " << lo->value << " .. " << hi->value << " (largest: " << hi->tensor << ")";
        field(out, label, line.str());
    }
}

void summaryLines(std::ostream& out, const InspectReport& report) {
    const io::CheckpointSummary& s = report.summary;
    field(out, "Checkpoint", report.path.string());
    std::string architecture = orUnknown(s.architecture);
    if (!s.modelType.empty() && s.modelType != s.architecture) architecture += " (" + s.modelType + ")";
    field(out, "Architecture", architecture);
    field(out, "Layers", orUnknown(s.numLayers));
    field(out, "Hidden size", orUnknown(s.hiddenSize));
    field(
        out, "Parameters",
        formatCount(report.parameters) + " (" + formatGrouped(report.parameters) + ")" +
            (report.parameters == s.parameterCount ? "" : ", " + formatGrouped(s.parameterCount) + " stored elements"));
    field(out, "Tensors",
          std::to_string(report.tensorCount) + " in " + std::to_string(report.shardCount) +
              (report.shardCount == 1 ? " shard" : " shards"));
    dtypeLines(out, s);
    field(out, "Size on disk",
          formatBytes(s.sizeOnDisk) + " (" + formatGrouped(static_cast<std::int64_t>(s.sizeOnDisk)) + " bytes)");
    field(out, "Quantization", orUnknown(s.quantizationFormat));
    quantizedLines(out, report.quantizedLinears);
    servingScaleLines(out, report.servingScales);
    field(out, "Tokenizer", s.hasTokenizer ? "yes" : "no");
    if (report.gguf) ggufLines(out, *report.gguf);
}

TextTable tensorTable(const InspectReport& report, bool withStats) {
    using Align = TextTable::Align;
    std::vector<TextTable::Column> columns{
        {"name", Align::Left}, {"dtype", Align::Left}, {"shape", Align::Left}, {"bytes", Align::Right}};
    if (withStats) {
        for (const char* title : {"min", "max", "mean", "std", "nan", "inf"}) columns.push_back({title, Align::Right});
    }
    TextTable table(std::move(columns));
    for (const InspectedTensor& t : report.tensors) {
        std::vector<std::string> row{t.info->name, t.info->typeName(), formatShape(t.info->shape),
                                     formatGrouped(static_cast<std::int64_t>(t.info->byteSize()))};
        if (withStats) {
            const analysis::TensorStats& st = *t.stats;
            for (double v : {st.min, st.max, st.mean, st.std}) row.push_back(formatNumber(v));
            row.push_back(formatGrouped(st.nanCount));
            row.push_back(formatGrouped(st.infCount));
        }
        table.addRow(std::move(row));
    }
    return table;
}

void tensorSection(std::ostream& out, const InspectReport& report) {
    out << '\n';
    if (!report.filter.empty()) {
        out << report.tensors.size() << " of " << report.tensorCount << " tensors match '" << report.filter << "'\n\n";
    }
    const bool withStats = !report.tensors.empty() && report.tensors.front().stats.has_value();
    tensorTable(report, withStats).print(out);
}

nlohmann::json statsJson(const analysis::TensorStats& s) {
    // nlohmann writes NaN as null, which is what a tensor without finite values gets.
    return {{"count", s.count}, {"finite", s.finiteCount}, {"nan", s.nanCount}, {"inf", s.infCount}, {"min", s.min},
            {"max", s.max},     {"mean", s.mean},          {"std", s.std}};
}

nlohmann::json tensorJson(const InspectedTensor& t) {
    nlohmann::json j{{"name", t.info->name},
                     {"dtype", t.info->typeName()},
                     {"shape", t.info->shape},
                     {"bytes", t.info->byteSize()},
                     {"shard", t.shard}};
    if (t.stats) j["stats"] = statsJson(*t.stats);
    return j;
}

nlohmann::json metadataValueJson(const io::GgufValue& v) {
    if (const auto* a = v.asArray())
        return {
            {"type", "array"}, {"element_type", io::ggufValueTypeName(a->elementType)}, {"length", a->items.size()}};
    if (const auto* str = v.asString()) return *str;
    if (const auto b = v.asBool()) return *b;
    if (v.type() == io::GgufValueType::F32 || v.type() == io::GgufValueType::F64) return *v.asNumber();
    if (const auto u = v.asUnsigned()) return *u;
    return *v.asInteger();
}

}  // namespace

GgufInspection inspectGguf(const io::Checkpoint& checkpoint) {
    const io::GgufFile& file = *checkpoint.gguf();
    GgufInspection g;
    g.version = file.header().version;
    g.alignment = file.header().alignment;
    if (const auto fileType = file.metadata().integer("general.file_type")) g.fileType = io::llamaFtypeName(*fileType);
    g.metadataJson = nlohmann::json::object();
    for (const auto& [key, value] : file.metadata().entries()) {
        // Keys and values are the file's own text: one line each, escaped, before a table shows them.
        g.metadata.emplace_back(sanitizeMessage(key, 200), sanitizeMessage(value.summary()));
        g.metadataJson[key] = metadataValueJson(value);
    }
    io::GgufBitsPerWeight bits = io::ggufBitsPerWeight(checkpoint);
    g.types = std::move(bits.byType);
    g.decoderLinears = bits.decoderLinears;
    g.allTensors = bits.allTensors;
    return g;
}

std::string renderText(const InspectReport& report) {
    std::ostringstream out;
    summaryLines(out, report);
    if (report.listLayers && !report.quantizedLinears.empty()) layerLines(out, report.quantizedLinears);
    if (report.listTensors) tensorSection(out, report);
    return out.str();
}

nlohmann::json renderJson(const InspectReport& report) {
    const io::CheckpointSummary& s = report.summary;
    nlohmann::json dtypes = nlohmann::json::object();
    for (const auto& [dtype, bytes] : s.bytesByDtype) dtypes[dtype] = {{"bytes", bytes}};
    nlohmann::json j{{"path", report.path.string()},
                     {"architecture", s.architecture},
                     {"model_type", s.modelType},
                     {"num_layers", s.numLayers},
                     {"hidden_size", s.hiddenSize},
                     {"parameters", report.parameters},
                     {"parameters_human", formatCount(report.parameters)},
                     {"stored_elements", s.parameterCount},
                     {"dtypes", dtypes},
                     {"size_on_disk", s.sizeOnDisk},
                     {"quantization_format", s.quantizationFormat},
                     {"has_tokenizer", s.hasTokenizer},
                     {"shards", report.shardCount},
                     {"tensor_count", report.tensorCount}};
    nlohmann::json quantized = nlohmann::json::array();
    for (const auto& l : report.quantizedLinears)
        quantized.push_back({{"linear", l.ref.label()},
                             {"codec", l.codec},
                             {"scheme", l.scheme},
                             {"bits", l.bits},
                             {"group_size", l.groupSize},
                             {"act_order", l.actOrder},
                             {"sym", l.symmetric},
                             {"rows", l.rows},
                             {"cols", l.cols},
                             {"summary", l.summary()},
                             {"problem", l.problem}});
    j["quantized_linears"] = std::move(quantized);
    nlohmann::json serving = nlohmann::json::array();
    for (const auto& s : report.servingScales)
        serving.push_back({{"tensor", s.tensor}, {"kind", s.kind}, {"layer", s.layer}, {"value", s.value}});
    j["serving_scales"] = std::move(serving);
    if (const auto& g = report.gguf) {
        nlohmann::json types = nlohmann::json::object();
        for (const auto& t : g->types)
            types[t.type] = {{"tensors", t.tensors},
                             {"weights", t.elements},
                             {"bytes", t.bytes},
                             {"bits_per_weight", t.bitsPerWeight()}};
        j["gguf"] = {{"version", g->version},
                     {"alignment", g->alignment},
                     {"file_type", g->fileType},
                     {"bits_per_weight", g->decoderLinears.bitsPerWeight()},  // the decoder's linears
                     {"bits_per_weight_all_tensors", g->allTensors.bitsPerWeight()},
                     {"tensor_types", std::move(types)},
                     {"metadata", g->metadataJson}};
    }
    j["warnings"] = report.warnings;
    if (report.listTensors) {
        if (!report.filter.empty()) j["filter"] = report.filter;
        nlohmann::json tensors = nlohmann::json::array();
        for (const InspectedTensor& t : report.tensors) tensors.push_back(tensorJson(t));
        j["tensors"] = std::move(tensors);
    }
    return j;
}

}  // namespace qs::cli
