#pragma once
// The layout oneDNN's BF16 matmul (f32 accumulation) wants its right operand B [k, n] in, asked with format
// "any" for kBf16LayoutRows rows on the left, so that one reordered B serves every row count: the BF16
// linears' weights (qs_model's bf16_layer_math) and the BF16 Hessians' tiles (bf16_gram.h) are kept in it.
#include <oneapi/dnnl/dnnl.hpp>

namespace qs::quant {

inline constexpr dnnl::memory::dim kBf16LayoutRows = 256;

dnnl::memory::desc bf16RightOperandLayout(const dnnl::engine& engine, dnnl::memory::dim k, dnnl::memory::dim n);

}  // namespace qs::quant
