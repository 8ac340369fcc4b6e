#include "qs/quant/bf16_layout.h"

namespace qs::quant {

dnnl::memory::desc bf16RightOperandLayout(const dnnl::engine& engine, dnnl::memory::dim k, dnnl::memory::dim n) {
    using dnnl::memory;
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc({{kBf16LayoutRows, k}, memory::data_type::bf16, memory::format_tag::ab},
                           {{k, n}, memory::data_type::bf16, memory::format_tag::any},
                           {{kBf16LayoutRows, n}, memory::data_type::f32, memory::format_tag::ab}),
        engine);
    return pd.weights_desc();
}

}  // namespace qs::quant
