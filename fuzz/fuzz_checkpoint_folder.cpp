// libFuzzer target for a whole checkpoint folder, through detect -> describe -> decode of every
// linear by every codec. One input is split into sections (fuzz_support.h):
//   0  config.json                       (absent when empty)
//   1  "<file name>\n<content>"          a side config: quantize_config.json, hf_quant_config.json
//                                        or quantization_config.json (EXL3)
//   2  the safetensors header JSON       (the 8-byte length is computed here)
//   3  the tensors' data bytes
// written to a scratch folder (in /dev/shm when there is one). Every outcome must be a result or a
// qs::Error whose message is one sanitised line: any other exception, a crash, a sanitizer report
// or a hang is a finding.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "fuzz_checkpoint.h"

namespace {

namespace fs = std::filesystem;
using qs::fuzz::checkRefusal;

const fs::path& scratch() {
    static const fs::path dir = qs::fuzz::scratchFolder("qs_fuzz_folder");
    return dir;
}

constexpr const char* kSideFiles[] = {"quantize_config.json", "hf_quant_config.json", "quantization_config.json"};

void write(const fs::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void layOut(const std::vector<std::string_view>& s) {
    const fs::path& dir = scratch();
    for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());
    if (!s.empty() && !s[0].empty()) write(dir / "config.json", s[0]);
    if (s.size() > 1) {
        const auto newline = s[1].find('\n');
        const std::string_view name = s[1].substr(0, newline);
        for (const char* side : kSideFiles)
            if (name == side && newline != std::string_view::npos) write(dir / side, s[1].substr(newline + 1));
    }
    if (s.size() > 2) {
        std::string file(8, '\0');
        for (int i = 0; i < 8; ++i)
            file[static_cast<std::size_t>(i)] = static_cast<char>((s[2].size() >> (8 * i)) & 0xFF);
        file.append(s[2]);
        if (s.size() > 3) file.append(s[3]);
        write(dir / "model.safetensors", file);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    layOut(qs::fuzz::sections(data, size));
    try {
        qs::fuzz::exerciseCheckpoint(qs::io::Checkpoint::open(scratch()));
    } catch (const qs::Error& e) {
        checkRefusal(e);
    }
    return 0;
}
