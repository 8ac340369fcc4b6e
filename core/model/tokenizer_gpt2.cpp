// Tokenizer::fromGpt2Files: OpenAI's original GPT-2 vocabulary files.
#include <sstream>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/json_file.h"
#include "qs/model/tokenizer.h"

#include "tokenizer_impl.h"

namespace qs::model {
namespace {

Vocabulary readEncoder(const std::filesystem::path& path) {
    try {
        const nlohmann::json encoder =
            io::parseJson(readTokenizerFile(path), path.string(), {.maxBytes = io::kMaxTokenizerJsonBytes});
        Vocabulary vocab;
        vocab.reserve(encoder.size());
        for (const auto& [token, id] : encoder.items())
            vocab.emplace(token, jsonTokenId(id, path.string() + ": '" + token + "'"));
        return vocab;
    } catch (const nlohmann::json::exception& e) {
        throw Error(path.string() + ": invalid encoder.json: " + io::jsonErrorText(e));
    }
}

// vocab.bpe: a "#version: 0.2" line, then one merge "a b" per line in rank order.
MergeList readMerges(const std::filesystem::path& path) {
    std::istringstream in(readTokenizerFile(path));
    MergeList merges;
    std::string line;
    std::size_t lineNumber = 0;
    while (std::getline(in, line)) {
        ++lineNumber;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (lineNumber == 1 && line.starts_with("#version"))) continue;
        const std::size_t space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == line.size())
            throw Error(path.string() + ": line " + std::to_string(lineNumber) + " is not a merge 'a b'");
        merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    }
    return merges;
}

}  // namespace

Tokenizer Tokenizer::fromGpt2Files(const std::filesystem::path& encoderJson, const std::filesystem::path& vocabBpe) {
    const std::string sourceName = vocabBpe.string();
    auto impl =
        std::make_unique<Impl>(sourceName, BpeModel(readEncoder(encoderJson), readMerges(vocabBpe), {}, sourceName));
    impl->preTokenizer.addByteLevel(false, true, sourceName);
    impl->decoder = Decoder::byteLevel();
    // GPT-2's only special token; Hugging Face's conversion declares it as an added token that is
    // both BOS and EOS, and GPT-2 does not add it on its own.
    if (const auto it = impl->model.vocabulary().find(std::string_view("<|endoftext|>"));
        it != impl->model.vocabulary().end()) {
        impl->added.add({"<|endoftext|>", it->second, true});
        impl->bos = impl->eos = it->second;
    }
    return Tokenizer(std::move(impl));
}

}  // namespace qs::model
