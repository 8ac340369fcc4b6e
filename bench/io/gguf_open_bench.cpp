// Opening a GGUF must cost its header, not its size: a Llama-shaped file (32 layers, 291 tensors,
// Q8_0 matrices, a 32,000-token tokenizer in the metadata) at 0.1, 1 and 4 GB opens in about the
// same time. The header is written for real; the data section is a hole (ftruncate), which opening
// never touches. `vs_smallest` is each size's open time over the 0.1 GB file's, measured in the
// same process.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"

namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kLayers = 32;
constexpr std::int64_t kVocab = 32000;
constexpr std::uint32_t kQ8 = 8, kF32 = 0;
constexpr std::uint64_t kAlignment = 32;

class Bytes {
public:
    template <typename T>
    void put(T v) {
        const auto* p = reinterpret_cast<const char*>(&v);
        out_.append(p, sizeof(T));
    }
    void str(const std::string& s) {
        put<std::uint64_t>(s.size());
        out_ += s;
    }
    std::string& text() { return out_; }

private:
    std::string out_;
};

struct Tensor {
    std::string name;
    std::vector<std::int64_t> dims;  // innermost first
    std::uint32_t type;
    std::uint64_t bytes() const {
        std::uint64_t n = 1;
        for (const auto d : dims) n *= static_cast<std::uint64_t>(d);
        return type == kQ8 ? n / 32 * 34 : n * 4;
    }
};

std::vector<Tensor> llamaTensors(std::int64_t hidden) {
    const std::int64_t ff = (hidden * 8 / 3 + 255) / 256 * 256;
    std::vector<Tensor> t{{"token_embd.weight", {hidden, kVocab}, kQ8}};
    for (std::int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"})
            t.push_back({p + m + ".weight", {hidden, hidden}, kQ8});
        t.push_back({p + "ffn_gate.weight", {hidden, ff}, kQ8});
        t.push_back({p + "ffn_up.weight", {hidden, ff}, kQ8});
        t.push_back({p + "ffn_down.weight", {ff, hidden}, kQ8});
        t.push_back({p + "attn_norm.weight", {hidden}, kF32});
        t.push_back({p + "ffn_norm.weight", {hidden}, kF32});
    }
    t.push_back({"output_norm.weight", {hidden}, kF32});
    t.push_back({"output.weight", {hidden, kVocab}, kQ8});
    return t;
}

std::uint64_t dataBytes(const std::vector<Tensor>& tensors) {
    std::uint64_t total = 0;
    for (const auto& t : tensors) total += (t.bytes() + kAlignment - 1) / kAlignment * kAlignment;
    return total;
}

std::int64_t hiddenFor(std::uint64_t target) {
    std::int64_t hidden = 256;
    while (dataBytes(llamaTensors(hidden + 256)) <= target) hidden += 256;
    return hidden;
}

struct Synthetic {
    fs::path path;
    std::uint64_t bytes = 0;
    std::size_t tensors = 0;
};

Synthetic writeSynthetic(const fs::path& path, std::uint64_t target) {
    const std::int64_t hidden = hiddenFor(target);
    const auto tensors = llamaTensors(hidden);
    Bytes b;
    b.text() = "GGUF";
    b.put<std::uint32_t>(3);
    b.put<std::uint64_t>(tensors.size());
    b.put<std::uint64_t>(5);
    b.str("general.architecture"), b.put<std::uint32_t>(8), b.str("llama");
    b.str("llama.embedding_length"), b.put<std::uint32_t>(4), b.put<std::uint32_t>(static_cast<std::uint32_t>(hidden));
    b.str("llama.block_count"), b.put<std::uint32_t>(4), b.put<std::uint32_t>(kLayers);
    b.str("tokenizer.ggml.tokens"), b.put<std::uint32_t>(9), b.put<std::uint32_t>(8), b.put<std::uint64_t>(kVocab);
    for (std::int64_t i = 0; i < kVocab; ++i) b.str("tok" + std::to_string(i));
    b.str("tokenizer.ggml.scores"), b.put<std::uint32_t>(9), b.put<std::uint32_t>(6), b.put<std::uint64_t>(kVocab);
    for (std::int64_t i = 0; i < kVocab; ++i) b.put(-static_cast<float>(i));
    std::uint64_t offset = 0;
    for (const auto& t : tensors) {
        b.str(t.name);
        b.put<std::uint32_t>(static_cast<std::uint32_t>(t.dims.size()));
        for (const auto d : t.dims) b.put<std::int64_t>(d);
        b.put<std::uint32_t>(t.type);
        b.put<std::uint64_t>(offset);
        offset += (t.bytes() + kAlignment - 1) / kAlignment * kAlignment;
    }
    b.text().resize((b.text().size() + kAlignment - 1) / kAlignment * kAlignment, '\0');
    const std::uint64_t headerBytes = b.text().size();
    {
        std::ofstream out(path, std::ios::binary);
        out << b.text();
        if (!out) throw std::runtime_error("cannot write " + path.string());
    }
    fs::resize_file(path, headerBytes + offset);  // the data section as a hole
    return {path, headerBytes + offset, tensors.size()};
}

class Files {
public:
    static Files& instance() {
        static Files files;
        return files;
    }
    const Synthetic& get(std::uint64_t target) {
        auto it = files_.find(target);
        if (it == files_.end())
            it = files_.emplace(target, writeSynthetic(root_ / (std::to_string(target) + ".gguf"), target)).first;
        return it->second;
    }
    ~Files() {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }

private:
    Files() : root_(fs::temp_directory_path() / ("qs_bench_gguf_" + std::to_string(::getpid()))) {
        fs::create_directories(root_);
    }
    fs::path root_;
    std::map<std::uint64_t, Synthetic> files_;
};

// Seconds per open of the smallest file, measured once per process, as the baseline of the ratios.
double smallestOpenSeconds() {
    static const double seconds = [] {
        const Synthetic& small = Files::instance().get(100'000'000ULL);
        constexpr int kRounds = 20;
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kRounds; ++i) benchmark::DoNotOptimize(qs::io::GgufFile::open(small.path));
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kRounds;
    }();
    return seconds;
}

template <typename Open>
void run(benchmark::State& state, Open open) {
    const Synthetic& file = Files::instance().get(static_cast<std::uint64_t>(state.range(0)) * 1'000'000ULL);
    const double baseline = smallestOpenSeconds();
    double seconds = 0.0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        open(file.path);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    state.counters["size_GB"] = static_cast<double>(file.bytes) / 1e9;
    state.counters["tensors"] = static_cast<double>(file.tensors);
    state.counters["vs_smallest"] = seconds / static_cast<double>(state.iterations()) / baseline;
}

void openGguf(benchmark::State& state) {
    run(state, [](const fs::path& p) { benchmark::DoNotOptimize(qs::io::GgufFile::open(p)); });
}

// As a checkpoint: the names mapped, the config synthesized, the tensors sorted.
void openGgufCheckpoint(benchmark::State& state) {
    run(state, [](const fs::path& p) { benchmark::DoNotOptimize(qs::io::Checkpoint::open(p)); });
}

// Arguments are sizes in MB.
BENCHMARK(openGguf)->Arg(100)->Arg(1000)->Arg(4000)->Unit(benchmark::kMillisecond);
BENCHMARK(openGgufCheckpoint)->Arg(100)->Arg(1000)->Arg(4000)->Unit(benchmark::kMillisecond);

}  // namespace
