#pragma once
// llama.h's enum llama_ftype, in one table: the number a GGUF's general.file_type holds, llama-quantize's
// name for it, and, for the file types that are one ggml type for every matrix, that type (the K types as
// their _M mix, as llama.cpp's converter and QuantScope's GGUF writer label such a file). The gaps are
// types llama.cpp has removed.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "qs/io/ggml_type.h"

namespace qs::io {

struct LlamaFtype {
    int number;
    std::string_view name;
    std::optional<GgmlType> uniformType;
};

inline constexpr std::array<LlamaFtype, 36> kLlamaFtypes = {{
    {0, "F32", GgmlType::F32},        {1, "F16", GgmlType::F16},          {2, "Q4_0", GgmlType::Q4_0},
    {3, "Q4_1", GgmlType::Q4_1},      {7, "Q8_0", GgmlType::Q8_0},        {8, "Q5_0", GgmlType::Q5_0},
    {9, "Q5_1", GgmlType::Q5_1},      {10, "Q2_K", GgmlType::Q2_K},       {11, "Q3_K_S", std::nullopt},
    {12, "Q3_K_M", GgmlType::Q3_K},   {13, "Q3_K_L", std::nullopt},       {14, "Q4_K_S", std::nullopt},
    {15, "Q4_K_M", GgmlType::Q4_K},   {16, "Q5_K_S", std::nullopt},       {17, "Q5_K_M", GgmlType::Q5_K},
    {18, "Q6_K", GgmlType::Q6_K},     {19, "IQ2_XXS", GgmlType::IQ2_XXS}, {20, "IQ2_XS", GgmlType::IQ2_XS},
    {21, "Q2_K_S", std::nullopt},     {22, "IQ3_XS", std::nullopt},       {23, "IQ3_XXS", GgmlType::IQ3_XXS},
    {24, "IQ1_S", GgmlType::IQ1_S},   {25, "IQ4_NL", GgmlType::IQ4_NL},   {26, "IQ3_S", GgmlType::IQ3_S},
    {27, "IQ3_M", std::nullopt},      {28, "IQ2_S", GgmlType::IQ2_S},     {29, "IQ2_M", std::nullopt},
    {30, "IQ4_XS", GgmlType::IQ4_XS}, {31, "IQ1_M", GgmlType::IQ1_M},     {32, "BF16", GgmlType::BF16},
    {36, "TQ1_0", GgmlType::TQ1_0},   {37, "TQ2_0", GgmlType::TQ2_0},     {38, "MXFP4_MOE", GgmlType::MXFP4},
    {39, "NVFP4", std::nullopt},      {40, "Q1_0", std::nullopt},         {41, "Q2_0", std::nullopt},
}};

// The number of llama-quantize's `name` ("Q4_K_M"), at compile time: a name not in the table does not compile.
consteval int llamaFtype(std::string_view name) {
    for (const LlamaFtype& t : kLlamaFtypes)
        if (t.name == name) return t.number;
    throw "not a llama_ftype name";
}

// llama.cpp's name of a general.file_type: "Q4_K_M"; "type N" for numbers it does not know.
std::string llamaFtypeName(std::int64_t number);

// The file type of a file whose matrices are all `type` (F16's when no file type is that one type).
int llamaFtypeOfUniform(GgmlType type);

}  // namespace qs::io
