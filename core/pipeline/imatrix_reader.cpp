// Reading an importance matrix as llama-quantize --imatrix does (tools/quantize: load_imatrix and
// load_legacy_imatrix): the GGUF format of current llama-imatrix builds, else the legacy binary one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <span>

#include "qs/error.h"
#include "qs/io/gguf_file.h"
#include "qs/pipeline/gguf_imatrix.h"

namespace qs::pipeline {
namespace {

constexpr std::string_view kSums = ".in_sum2";
constexpr std::string_view kCounts = ".counts";

std::vector<float> floatsOf(const io::TensorView& t, const std::filesystem::path& path) {
    if (t.info().ggmlType != io::GgmlType::F32)
        throw Error(path.string() + ": " + t.name() + " is " + t.info().typeName() + ", not the F32 of an imatrix");
    return t.toF32();
}

// The GGUF format: "<name>.in_sum2" [rows, cols] and "<name>.counts" [rows, 1] per entry.
void readGguf(const std::filesystem::path& path, ImatrixInfo& info,
              std::map<std::string, Imatrix::Entry, std::less<>>& entries) {
    const io::GgufFile file = io::GgufFile::open(path);
    const io::GgufMetadata& meta = file.metadata();
    if (const std::string* type = meta.string("general.type"); type && *type != "imatrix")
        throw Error(path.string() + ": a GGUF " + *type + ", not an imatrix (general.type)");
    if (const io::GgufArray* datasets = meta.array("imatrix.datasets"))
        for (const io::GgufValue& d : datasets->items)
            if (const std::string* name = d.asString()) info.datasets.push_back(*name);
    info.chunkCount = static_cast<std::uint32_t>(meta.integer("imatrix.chunk_count").value_or(0));
    info.chunkSize = static_cast<std::uint32_t>(meta.integer("imatrix.chunk_size").value_or(0));
    for (const io::TensorInfo& t : file.tensors()) {
        const std::string_view name = t.name;
        if (!name.ends_with(kSums)) continue;
        const std::string entry(name.substr(0, name.size() - kSums.size()));
        const io::TensorInfo* counts = file.find(entry + std::string(kCounts));
        if (counts == nullptr) throw Error(path.string() + ": " + entry + " has sums and no counts");
        Imatrix::Entry e;
        e.cols = t.shape.empty() ? 0 : t.shape.back();
        e.sums = floatsOf(file.view(t), path);
        e.counts = floatsOf(file.view(*counts), path);
        if (e.cols <= 0 || e.sums.size() != e.counts.size() * static_cast<std::size_t>(e.cols))
            throw Error(path.string() + ": " + entry + " has " + std::to_string(e.sums.size()) + " sums for " +
                        std::to_string(e.counts.size()) + " counts");
        entries.emplace(entry, std::move(e));
    }
}

template <typename T>
T readValue(std::ifstream& in, const std::filesystem::path& path, const std::string& what) {
    T value{};
    if (!in.read(reinterpret_cast<char*>(&value), sizeof(T)))
        throw Error(path.string() + ": the legacy imatrix ends inside " + what);
    return value;
}

// The legacy format (little-endian int32s): the entry count; per entry its name's length and bytes, the
// chunks it was computed on (ncall) and its values (nval floats: Σx²/count × ncall per column); then,
// in later versions, the last chunk and the dataset's name. llama-quantize divides by ncall.
void readLegacy(const std::filesystem::path& path, ImatrixInfo& info,
                std::map<std::string, Imatrix::Entry, std::less<>>& entries) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot be read");
    const auto count = readValue<std::int32_t>(in, path, "the entry count");
    if (count <= 0 || count > (1 << 20))
        throw Error(path.string() + ": neither a GGUF imatrix nor a legacy one (" + std::to_string(count) +
                    " entries)");
    for (std::int32_t i = 0; i < count; ++i) {
        const std::string where = "entry " + std::to_string(i + 1);
        const auto length = readValue<std::int32_t>(in, path, where);
        if (length <= 0 || length > 4096)
            throw Error(path.string() + ": " + where + " has a name of " + std::to_string(length) + " bytes");
        std::string name(static_cast<std::size_t>(length), '\0');
        if (!in.read(name.data(), length)) throw Error(path.string() + ": the legacy imatrix ends inside " + where);
        const auto chunks = readValue<std::int32_t>(in, path, name);
        const auto values = readValue<std::int32_t>(in, path, name);
        if (values <= 0) throw Error(path.string() + ": " + name + " has " + std::to_string(values) + " values");
        Imatrix::Entry e;
        e.cols = values;  // legacy entries of stacked experts are one row of every expert's columns
        e.sums.resize(static_cast<std::size_t>(values));
        if (!in.read(reinterpret_cast<char*>(e.sums.data()), static_cast<std::streamsize>(values) * 4))
            throw Error(path.string() + ": the legacy imatrix ends inside " + name + "'s values");
        e.counts = {chunks > 0 ? static_cast<float>(chunks) : 1.0f};
        entries.insert_or_assign(std::move(name), std::move(e));
    }
    if (in.peek() == std::char_traits<char>::eof()) return;
    info.chunkCount = static_cast<std::uint32_t>(std::max(0, readValue<std::int32_t>(in, path, "the chunk count")));
    const auto length = readValue<std::int32_t>(in, path, "the dataset's name");
    if (length < 0 || length > (1 << 16))
        throw Error(path.string() + ": a dataset name of " + std::to_string(length) + " bytes");
    std::string dataset(static_cast<std::size_t>(length), '\0');
    if (!in.read(dataset.data(), length))
        throw Error(path.string() + ": the legacy imatrix ends inside its dataset's name");
    info.datasets = {std::move(dataset)};
}

bool startsWithGgufMagic(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot be read");
    char magic[4] = {};
    return in.read(magic, 4) && io::hasGgufMagic(std::as_bytes(std::span<const char>(magic, 4)));
}

}  // namespace

Imatrix Imatrix::read(const std::filesystem::path& path) {
    Imatrix m;
    m.path_ = path;
    if (startsWithGgufMagic(path))
        readGguf(path, m.info_, m.entries_);
    else
        readLegacy(path, m.info_, m.entries_);
    if (m.entries_.empty())
        throw Error(path.string() +
                    ": no imatrix entry in it (no \"<tensor>.in_sum2\" with its \".counts\"): a model "
                    "rather than llama-imatrix's output?");
    return m;
}

quant::InputImportance Imatrix::importanceOf(const model::ModelConfig& config, int layer, std::string_view module,
                                             std::int64_t cols) const {
    const ImatrixPlace place = imatrixPlaceOf(config, layer, module);
    const auto it = entries_.find(place.names.front());
    if (it == entries_.end()) return {};
    const Entry& e = it->second;
    const auto rows = static_cast<std::int64_t>(e.counts.size());
    // A legacy entry of stacked experts is one row of rows × cols values.
    const std::int64_t entryRows = rows == 1 && e.cols == cols * place.rows && place.rows > 1 ? place.rows : rows;
    const std::int64_t entryCols = static_cast<std::int64_t>(e.sums.size()) / entryRows;
    if (entryCols != cols || place.row >= entryRows)
        throw Error(path_.string() + ": " + it->first + " has " + std::to_string(entryRows) + " x " +
                    std::to_string(entryCols) + " values for a linear of " + std::to_string(cols) + " inputs" +
                    (place.rows > 1 ? " in " + std::to_string(place.rows) + " experts" : std::string()));
    const float count = e.counts[static_cast<std::size_t>(rows == entryRows ? place.row : 0)];
    quant::InputImportance importance;
    const auto first = e.sums.begin() + static_cast<std::ptrdiff_t>(place.row * cols);
    if (count <= 0.0f) {  // no token reached it: llama-quantize weighs every column 1
        importance.sumSquares.assign(static_cast<std::size_t>(cols), 1.0f);
        importance.count = 1;
    } else if (count == std::floor(count) && count < 16777216.0f) {  // Σx² and whole tokens: divided when encoding
        importance.sumSquares.assign(first, first + cols);
        importance.count = static_cast<std::int64_t>(count);
    } else {  // divided here, as llama-quantize does in float
        importance.sumSquares.resize(static_cast<std::size_t>(cols));
        std::transform(first, first + cols, importance.sumSquares.begin(), [count](float v) { return v / count; });
        importance.count = 1;
    }
    return importance;
}

std::uint64_t Imatrix::fingerprint() const {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over every byte of the names and values
    const auto mix = [&h](std::span<const std::byte> bytes) {
        for (const std::byte b : bytes) h = (h ^ static_cast<std::uint64_t>(b)) * 1099511628211ULL;
    };
    for (const auto& [name, e] : entries_) {
        mix(std::as_bytes(std::span(name)));
        mix(std::as_bytes(std::span(e.sums)));
        mix(std::as_bytes(std::span(e.counts)));
    }
    return h;
}

}  // namespace qs::pipeline
