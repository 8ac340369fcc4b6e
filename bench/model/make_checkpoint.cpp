// make_checkpoint DIR [--layers N] [--hidden H] [--intermediate I] [--heads A] [--kv-heads K]
//                     [--vocab V] [--dtype bf16|f16|f32] [--tokenizer-from CHECKPOINT]
// Writes a Llama-shaped checkpoint with random weights (the pipeline tests' generator) for the peak
// memory benchmark (bench/peak_rss.sh), and copies a tokenizer beside it so that quantscope-cli can
// tokenize calibration text for it (ids stay below the tokenizer's vocabulary; vocab_size may pad).
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "qs/error.h"

#include "synthetic_checkpoint.h"

namespace {

qs::io::DType parseDtype(const std::string& name) {
    if (name == "bf16") return qs::io::DType::BF16;
    if (name == "f16") return qs::io::DType::F16;
    if (name == "f32") return qs::io::DType::F32;
    throw qs::Error("unknown dtype '" + name + "' (bf16, f16 or f32)");
}

void copyTokenizer(const std::filesystem::path& from, const std::filesystem::path& to) {
    for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
        if (std::filesystem::exists(from / name))
            std::filesystem::copy_file(from / name, to / name, std::filesystem::copy_options::overwrite_existing);
}

int run(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-')
        throw qs::Error("usage: make_checkpoint DIR [--layers N] [--hidden H] ... (see the source)");
    const std::filesystem::path dir = argv[1];
    qs::test::SyntheticModel model;
    std::filesystem::path tokenizerFrom;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--layers")
            model.layers = std::stoi(value);
        else if (flag == "--hidden")
            model.hidden = std::stoi(value);
        else if (flag == "--intermediate")
            model.intermediate = std::stoi(value);
        else if (flag == "--heads")
            model.heads = std::stoi(value);
        else if (flag == "--kv-heads")
            model.kvHeads = std::stoi(value);
        else if (flag == "--vocab")
            model.vocab = std::stoi(value);
        else if (flag == "--dtype")
            model.dtype = parseDtype(value);
        else if (flag == "--tokenizer-from")
            tokenizerFrom = value;
        else
            throw qs::Error("unknown option " + flag);
    }
    model.maxPositions = 4096;
    qs::test::writeSyntheticCheckpoint(dir, model);
    if (!tokenizerFrom.empty()) copyTokenizer(tokenizerFrom, dir);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "make_checkpoint: " << e.what() << '\n';
        return 2;
    }
}
