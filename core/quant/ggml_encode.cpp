// Which ggml types QuantScope encodes, and with which row encoder.
#include "qs/quant/ggml_encode.h"

#include <map>
#include <string>

#include "qs/error.h"

#include "ggml_encoders.h"

namespace qs::quant {
namespace {

const std::map<io::GgmlType, ggml::EncodeRow>& encoders() {
    using T = io::GgmlType;
    static const std::map<io::GgmlType, ggml::EncodeRow> table = {
        {T::F32, ggml::encodeF32},     {T::F16, ggml::encodeF16},      {T::BF16, ggml::encodeBf16},
        {T::Q8_0, ggml::encodeQ8_0},   {T::Q4_0, ggml::encodeQ4_0},    {T::Q4_1, ggml::encodeQ4_1},
        {T::Q5_0, ggml::encodeQ5_0},   {T::Q5_1, ggml::encodeQ5_1},    {T::Q2_K, ggml::encodeQ2_K},
        {T::Q3_K, ggml::encodeQ3_K},   {T::Q4_K, ggml::encodeQ4_K},    {T::Q5_K, ggml::encodeQ5_K},
        {T::Q6_K, ggml::encodeQ6_K},   {T::IQ4_NL, ggml::encodeIq4Nl}, {T::IQ4_XS, ggml::encodeIq4Xs},
        {T::MXFP4, ggml::encodeMxfp4}, {T::NVFP4, ggml::encodeNvfp4},
    };
    return table;
}

}  // namespace

bool ggmlEncodes(io::GgmlType type) { return encoders().count(type) != 0; }

void ggmlEncodeRow(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    const auto it = encoders().find(type);
    if (it == encoders().end())
        throw Error("ggml type " + std::string(io::ggmlTypeTraits(type).name) + " cannot be encoded by QuantScope");
    io::ggmlRowBytes(type, n);  // checks whole blocks
    it->second(src, dst, n, importance);
}

void ggmlEncodeRows(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t rows, std::int64_t n,
                    const float* importance) {
    const auto it = encoders().find(type);
    if (it == encoders().end())
        throw Error("ggml type " + std::string(io::ggmlTypeTraits(type).name) + " cannot be encoded by QuantScope");
    const std::size_t rowBytes = io::ggmlRowBytes(type, n);  // checks whole blocks
    const ggml::EncodeRow encode = it->second;
    // Rows are independent and each encoder is pure, so any split gives the same bytes.
#pragma omp parallel for schedule(dynamic, 4)
    for (std::int64_t r = 0; r < rows; ++r)
        encode(src + r * n, dst + static_cast<std::size_t>(r) * rowBytes, n, importance);
}

}  // namespace qs::quant
