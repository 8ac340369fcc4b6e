#pragma once
// Greedy (argmax) decoding: the simplest generation, used to check a forward pass end to end against
// reference implementations (llama2.c run.c -t 0) and to show sample text of a quantized model.
#include <span>
#include <vector>

#include "qs/model/transformer.h"

namespace qs::model {

// Index of the largest logit of `logits` (the first one on ties, as torch.argmax and llama2.c do).
TokenId argmax(const Eigen::Ref<const VectorF>& logits);

// Runs `prompt` (non-empty) and then `steps` tokens, each the argmax of the previous position's logits,
// through a KV cache. Returns the generated tokens only (not the prompt). Stops early after `stopToken`
// when it is >= 0 (the stop token is included).
std::vector<TokenId> greedyDecode(Transformer& model, std::span<const TokenId> prompt, int steps,
                                  TokenId stopToken = -1);

}  // namespace qs::model
