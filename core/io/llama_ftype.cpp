#include "qs/io/llama_ftype.h"

namespace qs::io {

std::string llamaFtypeName(std::int64_t number) {
    for (const LlamaFtype& t : kLlamaFtypes)
        if (t.number == number) return std::string(t.name);
    return "type " + std::to_string(number);
}

int llamaFtypeOfUniform(GgmlType type) {
    for (const LlamaFtype& t : kLlamaFtypes)
        if (t.uniformType == type) return t.number;
    return llamaFtype("F16");
}

}  // namespace qs::io
