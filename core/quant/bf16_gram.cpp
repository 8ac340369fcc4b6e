#include "qs/quant/bf16_gram.h"

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "qs/error.h"
#include "qs/quant/bf16_layout.h"

namespace qs::quant {

namespace {

using dnnl::memory;

// A chunk's rows are padded to a multiple of this (the matmuls' K).
constexpr std::int64_t kRowMultiple = 128;

// The matmul of a tile product: M = the left tile's width, K = the chunk's rows, N = the right tile's width.
using Shape = std::tuple<memory::dim, memory::dim, memory::dim>;

// oneDNN's objects for the gram products, shared by every chunk: one engine, the right operand's layout
// for each K x N (bf16_layout.h: one reordered tile serves every left tile, the narrower last one too),
// and each shape's primitive reading that layout.
class Bf16Matmuls {
public:
    static Bf16Matmuls& instance() {
        static Bf16Matmuls matmuls;
        return matmuls;
    }

    const dnnl::engine& engine() const { return engine_; }

    memory::desc layout(memory::dim k, memory::dim n) {
        std::lock_guard lock(mutex_);
        return layoutLocked(k, n);
    }

    // Each primitive works in a scratchpad its caller gives it: oneDNN's own is shared by every primitive
    // (Debian's build is not made for concurrent execution), and the products run on several threads.
    struct Primitive {
        dnnl::matmul matmul;
        memory::desc scratchpad;
        std::string implementation;
    };

    const Primitive& primitive(const Shape& shape) {
        std::lock_guard lock(mutex_);
        if (const auto it = primitives_.find(shape); it != primitives_.end()) return it->second;
        const auto [m, k, n] = shape;
        dnnl::primitive_attr attributes;
        attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        const dnnl::matmul::primitive_desc pd(
            dnnl::matmul::desc({{m, k}, memory::data_type::bf16, memory::format_tag::ab}, layoutLocked(k, n),
                               {{m, n}, memory::data_type::f32, memory::format_tag::ab}),
            attributes, engine_);
        return primitives_.emplace(shape, Primitive{dnnl::matmul(pd), pd.scratchpad_desc(), pd.impl_info_str()})
            .first->second;
    }

private:
    Bf16Matmuls() : engine_(dnnl::engine::kind::cpu, 0) {}

    memory::desc layoutLocked(memory::dim k, memory::dim n) {
        if (const auto it = layouts_.find({k, n}); it != layouts_.end()) return it->second;
        return layouts_.emplace(std::make_pair(k, n), bf16RightOperandLayout(engine_, k, n)).first->second;
    }

    dnnl::engine engine_;
    std::mutex mutex_;
    std::map<std::pair<memory::dim, memory::dim>, memory::desc> layouts_;
    std::map<Shape, Primitive> primitives_;
};

memory::desc f32View(memory::dim rows, memory::dim cols, memory::dim rowStride, memory::dim colStride) {
    return memory::desc({rows, cols}, memory::data_type::f32, memory::dims{rowStride, colStride});
}

// f32 → bf16 in oneDNN's rounding (to nearest even), one reorder on the calling thread, in its own scratchpad.
void reorderInto(const memory::desc& from, const float* data, memory& to, const dnnl::engine& engine) {
    memory source(from, engine, const_cast<float*>(data));
    dnnl::primitive_attr attributes;
    attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::reorder::primitive_desc pd(source, to, attributes);
    memory scratchpad(pd.scratchpad_desc(), engine);
    dnnl::stream stream(engine);
    dnnl::reorder(pd).execute(stream, {{DNNL_ARG_FROM, source}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
}

}  // namespace

bool bf16GramAvailable() {
    static const bool available = [] {
        try {
            const auto& p = Bf16Matmuls::instance().primitive(Shape{256, 256, 256});
            return !std::string_view(p.implementation).starts_with("ref");
        } catch (const dnnl::error&) {
            return false;
        }
    }();
    return available;
}

struct Bf16Gram::Tiles {
    std::int64_t rows = 0, features = 0, tile = 0;
    std::vector<memory> left;   // Xᵢᵀ [width, rows], row-major bf16
    std::vector<memory> right;  // Xⱼ [rows, width] in its matmul's layout
    std::int64_t width(std::int64_t i) const { return std::min(tile, features - i * tile); }
    Shape shape(std::int64_t i, std::int64_t j) const { return {width(i), rows, width(j)}; }
};

Bf16Gram::Bf16Gram(const Eigen::Ref<const MatrixF>& chunk, std::int64_t tile) : tiles_(std::make_unique<Tiles>()) {
    if (tile <= 0) throw Error("Bf16Gram: the tile width must be positive");
    // Rows padded with zeros (which add nothing to a product) to a multiple of kRowMultiple: the primitives
    // are cached by shape, and an expert's routed token counts would each add their own.
    MatrixF padded;
    if (chunk.rows() % kRowMultiple != 0) {
        padded = MatrixF::Zero((chunk.rows() + kRowMultiple - 1) / kRowMultiple * kRowMultiple, chunk.cols());
        padded.topRows(chunk.rows()) = chunk;
    }
    const Eigen::Ref<const MatrixF> x = padded.size() > 0 ? Eigen::Ref<const MatrixF>(padded) : chunk;
    Tiles& t = *tiles_;
    t.rows = x.rows(), t.features = x.cols(), t.tile = tile;
    const std::int64_t count = (t.features + tile - 1) / tile;
    if (t.rows == 0 || count == 0) return;
    Bf16Matmuls& matmuls = Bf16Matmuls::instance();
    try {
        for (std::int64_t i = 0; i < count; ++i) {
            t.left.emplace_back(memory::desc({t.width(i), t.rows}, memory::data_type::bf16, memory::format_tag::ab),
                                matmuls.engine());
            t.right.emplace_back(matmuls.layout(t.rows, t.width(i)), matmuls.engine());
        }
        // Every shape the products ask for, made here: product() runs inside an OpenMP loop, where a
        // primitive's creation must not throw.
        for (const std::int64_t i : {std::int64_t(0), count - 1})
            for (const std::int64_t j : {std::int64_t(0), count - 1}) (void)matmuls.primitive(t.shape(i, j));
    } catch (const dnnl::error& e) {
        throw Error(std::string("BF16 Hessians: oneDNN cannot multiply BF16 on this CPU (") + e.what() + ")");
    }
    const std::int64_t stride = x.outerStride();
    // Each tile's two copies by one thread: a reorder inside the parallel region runs on its thread.
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t i = 0; i < count; ++i) {
        const float* column = x.data() + i * tile;
        reorderInto(f32View(t.width(i), t.rows, 1, stride), column, t.left[std::size_t(i)], matmuls.engine());
        reorderInto(f32View(t.rows, t.width(i), stride, 1), column, t.right[std::size_t(i)], matmuls.engine());
    }
}

Bf16Gram::~Bf16Gram() = default;

void Bf16Gram::product(std::int64_t i, std::int64_t j, MatrixF& out) const {
    const Tiles& t = *tiles_;
    Bf16Matmuls& matmuls = Bf16Matmuls::instance();
    out.resize(t.width(i), t.width(j));
    if (t.rows == 0) {
        out.setZero();
        return;
    }
    const Bf16Matmuls::Primitive& p = matmuls.primitive(t.shape(i, j));
    memory result(memory::desc({t.width(i), t.width(j)}, memory::data_type::f32, memory::format_tag::ab),
                  matmuls.engine(), out.data());
    memory scratchpad(p.scratchpad, matmuls.engine());
    dnnl::stream stream(matmuls.engine());
    p.matmul.execute(stream, {{DNNL_ARG_SRC, t.left[std::size_t(i)]},
                              {DNNL_ARG_WEIGHTS, t.right[std::size_t(j)]},
                              {DNNL_ARG_DST, result},
                              {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
}

}  // namespace qs::quant
