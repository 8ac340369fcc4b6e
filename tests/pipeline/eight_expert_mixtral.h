#pragma once
// A Mixtral with 8 experts (llama.cpp's n_expert == 8 rules) whose rows are whole K blocks (256 wide),
// with the tiny Mixtral's tokenizer so that its GGUF is a complete model (vocabulary 320): the MoE
// checkpoint the GGUF-method tests quantize with K types.
#include <filesystem>

#include "synthetic_checkpoint.h"

namespace qs::test {

inline std::filesystem::path writeEightExpertMixtral(const std::filesystem::path& dir) {
    SyntheticModel m;
    m.hidden = 256, m.intermediate = 256, m.heads = 4, m.kvHeads = 2, m.vocab = 320, m.experts = 8, m.seed = 31;
    writeSyntheticCheckpoint(dir, m);
    const std::filesystem::path tiny = std::filesystem::path(QS_TEST_DATA_DIR) / "moe" / "mixtral-tiny";
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
        std::filesystem::copy_file(tiny / file, dir / file);
    return dir;
}

}  // namespace qs::test
