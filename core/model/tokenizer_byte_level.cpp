#include "tokenizer_byte_level.h"

#include <array>

#include "tokenizer_utf8.h"

namespace qs::model::byte_level {
namespace {

// bytes_to_unicode() of OpenAI's encoder.py: printable Latin-1 bytes stand for themselves, the
// other 68 bytes take the code points 256, 257, ... in byte order.
struct Alphabet {
    std::array<std::string, 256> byteToChar;
    std::array<int, 512> charToByte{};  // indexed by code point; every alphabet code point is < 324

    Alphabet() {
        charToByte.fill(-1);
        char32_t extra = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t cp = printable ? static_cast<char32_t>(b) : extra++;
            utf8::append(byteToChar[b], cp);
            charToByte[cp] = b;
        }
    }
};

const Alphabet& alphabet() {
    static const Alphabet instance;
    return instance;
}

}  // namespace

std::string encode(std::string_view bytes) {
    const Alphabet& a = alphabet();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) out += a.byteToChar[static_cast<unsigned char>(c)];
    return out;
}

bool decode(std::string_view text, std::string& out) {
    const Alphabet& a = alphabet();
    const std::size_t start = out.size();
    std::size_t pos = 0;
    while (pos < text.size()) {
        const char32_t cp = utf8::next(text, pos);
        if (cp >= a.charToByte.size() || a.charToByte[cp] < 0) {
            out.resize(start);
            return false;
        }
        out.push_back(static_cast<char>(a.charToByte[cp]));
    }
    return true;
}

}  // namespace qs::model::byte_level
