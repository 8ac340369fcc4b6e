// readLlama2cTokenizer: llama2.c's tokenizer.bin as a SentencePiece vocabulary, typed as llama.cpp's
// convert-llama2c-to-ggml types it.
#include <cstdio>
#include <cstring>
#include <sstream>

#include "qs/error.h"
#include "qs/io/regular_file.h"
#include "qs/model/gguf_tokenizer.h"

namespace qs::model {

// llama2.c's 32,000-token tokenizer.bin is 424 KB; tokens are at most 1 KB each (checked below).
constexpr std::uint64_t kMaxLlama2cTokenizerBytes = 64ull << 20;

std::vector<SentencePiece> readLlama2cTokenizer(const std::filesystem::path& path, int vocabSize) {
    // Read through the regular-file reader: a FIFO or device given as the tokenizer is refused, not waited on.
    std::istringstream in(io::readRegularFile(path, kMaxLlama2cTokenizerBytes, "a llama2.c tokenizer"));
    const auto fail = [&](const std::string& what) -> void { throw Error(path.string() + ": " + what); };
    const auto readInt = [&] {
        std::uint8_t b[4] = {};
        if (!in.read(reinterpret_cast<char*>(b), 4)) fail("truncated");
        return static_cast<std::uint32_t>(b[0] | b[1] << 8 | b[2] << 16 | static_cast<std::uint32_t>(b[3]) << 24);
    };
    readInt();  // the longest token's length, which nothing needs
    std::vector<SentencePiece> pieces;
    for (int id = 0; id < vocabSize; ++id) {
        const std::uint32_t scoreBits = readInt();
        float score = 0.0f;
        std::memcpy(&score, &scoreBits, 4);
        const std::uint32_t length = readInt();
        if (length > 1024) fail("token " + std::to_string(id) + " claims " + std::to_string(length) + " bytes");
        std::string text(length, '\0');
        if (!in.read(text.data(), length)) fail("truncated in token " + std::to_string(id));
        PieceType type = PieceType::Normal;
        unsigned byte = 0;
        char rest = 0;
        if (id == 0)
            text = "<unk>", type = PieceType::Unknown;
        else if (id == 1)
            text = "<s>", type = PieceType::Control;
        else if (id == 2)
            text = "</s>", type = PieceType::Control;
        else if (text.size() == 6 && std::sscanf(text.c_str(), "<0x%2X>%c", &byte, &rest) == 1)
            type = PieceType::Byte;
        std::string escaped;  // llama2.c keeps spaces; SentencePiece writes them as "▁"
        for (const char ch : text) escaped += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
        pieces.push_back({escaped, score, type});
    }
    return pieces;
}

}  // namespace qs::model
