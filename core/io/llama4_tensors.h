#pragma once
// Private to qs_io: how Llama 4's checkpoints name and store what QuantScope reads under the names it uses
// everywhere else (architectures::Family::denseMlpBlock, MoeSpec::fusedTransposed):
//   <layer>.feed_forward.{gate,up,down}_proj.*  (a dense layer's MLP)  <->  <layer>.mlp.{gate,up,down}_proj.*
//   <block>.experts.gate_up_proj [E, H, 2I]  ->  <block>.experts.<e>.gate_proj.weight [I, H] (columns 0..I-1 of
//                                                expert e, transposed) and up_proj.weight (columns I..2I-1)
//   <block>.experts.down_proj    [E, I, H]   ->  <block>.experts.<e>.down_proj.weight [H, I]
// (Llama4TextExperts: gate_up = x @ gate_up_proj[e], chunked into gate and up; down = h @ down_proj[e]). The
// transposed twins are no view of the file: their bytes are rearranged into memory once, in the stored dtype
// (a permutation of the elements, so the values are the file's bit for bit).
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/tensor.h"

#include "fused_experts.h"

namespace qs::io::detail {

// "language_model.model.layers.3.feed_forward.gate_proj.weight" -> "...layers.3.mlp.gate_proj.weight" for
// block "feed_forward"; nullopt for any other name.
std::optional<std::string> denseMlpAlias(std::string_view name, std::string_view block);
// The inverse: "...layers.3.mlp.down_proj.qweight" -> "...layers.3.feed_forward.down_proj.qweight"; other
// names unchanged.
std::string denseMlpStoredName(std::string_view name, std::string_view block);

// The bytes the transposed twins of `fused` take (its own size), 0 when it is no fused expert tensor of floats.
std::uint64_t transposedTwinBytes(const TensorInfo& fused);
// Writes the per-expert twins of `fused` (bytes `stored`) into `out` from offset `at` and returns their
// TensorInfos (offsets into `out`); throws qs::Error naming `file` when the shape is not Llama 4's.
std::vector<TensorInfo> transposedExpertTwins(const TensorInfo& fused, std::span<const std::byte> stored,
                                              const ExpertModuleNames& names, std::span<std::byte> out,
                                              std::uint64_t at, const std::string& file);

}  // namespace qs::io::detail
