// libFuzzer target for parseGguf: any input must either be rejected with qs::Error or give a header
// whose invariants hold (tensor data aligned, inside the file and not overlapping, sizes matching
// shapes and types), and whose tensors of decodable types can be decoded without reading outside
// the input. A file that parses is then opened as a checkpoint, as every command opens it: its
// config synthesized from the metadata, detect, the config-vs-tensors check, decode of every linear
// and the tokenizer from its metadata, where a refusal must be one sanitised line (fuzz_checkpoint.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <vector>

#include "qs/error.h"
#include "qs/io/gguf_file.h"
#include "qs/model/tokenizer.h"

#include "fuzz_checkpoint.h"

namespace {

using qs::fuzz::check;

void checkInvariants(const qs::io::GgufHeader& h, std::span<const std::byte> file) {
    check(h.dataOffset <= file.size() && h.alignment != 0 && (h.alignment & (h.alignment - 1)) == 0);
    const auto data = file.subspan(h.dataOffset);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (const auto& t : h.tensors) {
        check(t.ggmlType.has_value() && t.begin % h.alignment == 0 && t.end >= t.begin && t.end <= data.size());
        check(t.byteSize() == t.storedSize());
        ranges.emplace_back(t.begin, t.end);
        if (!t.decodesToF32()) continue;
        const qs::io::TensorView view(t, data.subspan(t.begin, t.byteSize()));
        // A prefix of each tensor: enough to run the decoders on whatever bytes the input holds.
        const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(t.numel()), 1 << 12);
        std::vector<float> values(count);
        view.decode(0, count, values.data());
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i)
        check(ranges[i].first >= ranges[i - 1].second || ranges[i].first == ranges[i].second);
}

// The parsed input as a file, through Checkpoint::open and what runs on it.
void exerciseAsCheckpoint(std::span<const std::byte> file) {
    static const std::filesystem::path path = qs::fuzz::scratchFolder("qs_fuzz_gguf") / "model.gguf";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
    }
    try {
        const auto ck = qs::io::Checkpoint::open(path);
        qs::fuzz::exerciseCheckpoint(ck);
        (void)qs::model::Tokenizer::forCheckpoint(ck).encode("Hello, world");
    } catch (const qs::Error& e) {
        qs::fuzz::checkRefusal(e);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
    try {
        checkInvariants(qs::io::parseGguf(file, "fuzz.gguf"), file);
    } catch (const qs::Error& e) {
        qs::fuzz::checkRefusal(e);  // rejected with a message: the expected outcome for most inputs
        return 0;
    }
    exerciseAsCheckpoint(file);
    return 0;
}
