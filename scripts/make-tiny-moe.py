#!/usr/bin/env python3
"""Write the tiny random MoE checkpoints of the tests: tests/data/moe/qwen3-moe-tiny, mixtral-tiny, glm4-moe-tiny,
deepseek-v3-tiny and kimi-k2-tiny.

Each is config.json + model.safetensors (F32) in the exact Hugging Face layout of its architecture
(transformers' Qwen3MoeForCausalLM / MixtralForCausalLM / Glm4MoeForCausalLM: the router `mlp.gate` /
`block_sparse_moe.gate`, the experts `mlp.experts.{e}.{gate,up,down}_proj` /
`block_sparse_moe.experts.{e}.w1/w3/w2`; GLM's `mlp.gate.e_score_correction_bias`, `mlp.shared_experts.*`
and its next-token-prediction layer after the decoder's), plus the byte-level tokenizer of the bundled demo
(resources/demo/tokenizer.json, tokenizer_config.json; vocabulary 320). The weights are random
(Python's own Mersenne Twister, fixed seeds): no training, only the architecture matters. Scales are
chosen so the routing is far from uniform and the next-token distributions are sharp, which makes a
wrong expert, a wrong weight or a wrong name show in the KL.

Pure Python (no numpy, no torch): python3 scripts/make-tiny-moe.py [--repo PATH]
"""
import argparse
import json
import os
import random
import shutil
import struct

VOCAB = 320


def bf16_bits(value):
    """The bfloat16 nearest to `value` (round to nearest even), as its 16 bits."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def write_safetensors(path, tensors):
    """tensors: list of (name, shape, flat list of floats[, dtype]), stored little-endian as F32 (default)
    or BF16, names sorted."""
    header, blobs, offset = {}, [], 0
    for name, shape, values, *rest in sorted(tensors, key=lambda t: t[0]):
        dtype = rest[0] if rest else "F32"
        if dtype == "BF16":
            data = struct.pack("<%dH" % len(values), *[bf16_bits(v) for v in values])
        else:
            data = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


class Weights:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.tensors = []

    def matrix(self, name, rows, cols, scale):
        self.tensors.append((name, (rows, cols), [self.rng.gauss(0.0, scale) for _ in range(rows * cols)]))

    def norm(self, name, n):
        self.tensors.append((name, (n,), [self.rng.uniform(0.7, 1.3) for _ in range(n)]))


    def vector(self, name, n, low, high):
        self.tensors.append((name, (n,), [self.rng.uniform(low, high) for _ in range(n)]))


def attention(w, p, hidden, heads, kv_heads, head_dim, qk_norm, qkv_bias=False):
    s = 1.0 / hidden ** 0.5
    w.norm(p + "input_layernorm.weight", hidden)
    w.matrix(p + "self_attn.q_proj.weight", heads * head_dim, hidden, s)
    w.matrix(p + "self_attn.k_proj.weight", kv_heads * head_dim, hidden, s)
    w.matrix(p + "self_attn.v_proj.weight", kv_heads * head_dim, hidden, s)
    if qkv_bias:
        for name, rows in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
            w.vector(p + "self_attn.%s_proj.bias" % name, rows * head_dim, -0.5, 0.5)
    w.matrix(p + "self_attn.o_proj.weight", hidden, heads * head_dim, 1.0 / (heads * head_dim) ** 0.5)
    if qk_norm:
        w.norm(p + "self_attn.q_norm.weight", head_dim)
        w.norm(p + "self_attn.k_norm.weight", head_dim)
    w.norm(p + "post_attention_layernorm.weight", hidden)


def experts(w, p, block, names, count, hidden, width, router_scale=1.0):
    w.matrix(p + block + ".gate.weight", count, hidden, router_scale)  # sharp: experts clearly preferred
    for e in range(count):
        x = "%s%s.experts.%d." % (p, block, e)
        w.matrix(x + names[0] + ".weight", width, hidden, 1.5 / hidden ** 0.5)
        w.matrix(x + names[1] + ".weight", width, hidden, 1.5 / hidden ** 0.5)
        w.matrix(x + names[2] + ".weight", hidden, width, 1.5 / width ** 0.5)


def dense_mlp(w, p, prefix, hidden, width):
    w.matrix(p + prefix + "gate_proj.weight", width, hidden, 1.5 / hidden ** 0.5)
    w.matrix(p + prefix + "up_proj.weight", width, hidden, 1.5 / hidden ** 0.5)
    w.matrix(p + prefix + "down_proj.weight", hidden, width, 1.5 / width ** 0.5)


def model(w, config, layer_body):
    hidden = config["hidden_size"]
    w.matrix("model.embed_tokens.weight", VOCAB, hidden, 1.0)
    for i in range(config["num_hidden_layers"]):
        layer_body("model.layers.%d." % i)
    w.norm("model.norm.weight", hidden)
    w.matrix("lm_head.weight", VOCAB, hidden, 3.0 / hidden ** 0.5)


COMMON = {"hidden_act": "silu", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "vocab_size": VOCAB, "max_position_embeddings": 1024, "rms_norm_eps": 1e-6,
          "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 256,
          "eos_token_id": 256, "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
          "transformers_version": "4.51.0", "output_router_logits": False, "router_aux_loss_coef": 0.001}


def qwen3_moe():
    c = dict(COMMON, architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", head_dim=16, intermediate_size=48,
             moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
             mlp_only_layers=[], attention_bias=False, use_sliding_window=False, sliding_window=None,
             max_window_layers=2, rope_scaling=None)
    w = Weights(1601)
    model(w, c, lambda p: (attention(w, p, 32, 4, 2, 16, True),
                           experts(w, p, "mlp", ("gate_proj", "up_proj", "down_proj"), 4, 32, 16)))
    return c, w


def mixtral():
    c = dict(COMMON, architectures=["MixtralForCausalLM"], model_type="mixtral", intermediate_size=32,
             num_local_experts=4, num_experts_per_tok=2, sliding_window=None, router_jitter_noise=0.0)
    w = Weights(1602)
    model(w, c, lambda p: (attention(w, p, 32, 4, 2, 8, False),
                           experts(w, p, "block_sparse_moe", ("w1", "w3", "w2"), 4, 32, 32)))
    return c, w


def glm4_moe():
    """GLM-4.5's layout: a dense first layer (first_k_dense_replace 1), then sigmoid-routed experts in two
    groups of four (one kept per token), a correction bias that changes the choice, a shared expert,
    routed_scaling_factor 2.5, q/k/v biases, q/k norms and half of each head rotated; the
    next-token-prediction layer (model.layers.3, num_nextn_predict_layers 1) is stored as GLM stores it
    and run by neither transformers nor llama.cpp."""
    c = dict(COMMON, architectures=["Glm4MoeForCausalLM"], model_type="glm4_moe", num_hidden_layers=3,
             head_dim=16, partial_rotary_factor=0.5, attention_bias=True, use_qk_norm=True, intermediate_size=48,
             moe_intermediate_size=16, n_routed_experts=8, n_group=2, topk_group=1, num_experts_per_tok=2,
             n_shared_experts=1, routed_scaling_factor=2.5, norm_topk_prob=True, first_k_dense_replace=1,
             num_nextn_predict_layers=1, rms_norm_eps=1e-5, rope_scaling=None, pad_token_id=256)
    del c["output_router_logits"], c["router_aux_loss_coef"]
    w = Weights(1603)

    def layer(p, sparse):
        attention(w, p, 32, 4, 2, 16, True, qkv_bias=True)
        if not sparse:
            dense_mlp(w, p, "mlp.", 32, 48)
            return
        # sigmoid scores far from 0 and 1, so that the correction bias changes the choice
        experts(w, p, "mlp", ("gate_proj", "up_proj", "down_proj"), 8, 32, 16, router_scale=0.35)
        w.vector(p + "mlp.gate.e_score_correction_bias", 8, 0.0, 0.4)  # positive: llama.cpp's -inf mask agrees
        dense_mlp(w, p, "mlp.shared_experts.", 32, 16)

    hidden = c["hidden_size"]
    w.matrix("model.embed_tokens.weight", VOCAB, hidden, 1.0)
    for i in range(c["num_hidden_layers"]):
        layer("model.layers.%d." % i, i >= c["first_k_dense_replace"])
    mtp = "model.layers.%d." % c["num_hidden_layers"]
    layer(mtp, True)
    w.matrix(mtp + "eh_proj.weight", hidden, 2 * hidden, 1.0 / hidden ** 0.5)
    w.norm(mtp + "enorm.weight", hidden)
    w.norm(mtp + "hnorm.weight", hidden)
    w.norm(mtp + "shared_head.norm.weight", hidden)
    w.norm("model.norm.weight", hidden)
    w.matrix("lm_head.weight", VOCAB, hidden, 3.0 / hidden ** 0.5)
    return c, w


def latent_attention(w, p, c):
    """DeepSeek-V3's multi-head latent attention (transformers' DeepseekV3Attention) of one layer: q_a_proj,
    q_a_layernorm and q_b_proj (or q_proj without q_lora_rank), kv_a_proj_with_mqa (the latent, then the
    shared rotary key), kv_a_layernorm, kv_b_proj (per head: the key's non-rotary part, then the value) and
    o_proj. The projections are scaled up so that attention is sharp and each part of it shows in the KL."""
    hidden, heads = c["hidden_size"], c["num_attention_heads"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    rank, q_rank = c["kv_lora_rank"], c["q_lora_rank"]
    w.norm(p + "input_layernorm.weight", hidden)
    if q_rank is None:
        w.matrix(p + "self_attn.q_proj.weight", heads * (nope + rope), hidden, 2.0 / hidden ** 0.5)
    else:
        w.matrix(p + "self_attn.q_a_proj.weight", q_rank, hidden, 1.0 / hidden ** 0.5)
        w.norm(p + "self_attn.q_a_layernorm.weight", q_rank)
        w.matrix(p + "self_attn.q_b_proj.weight", heads * (nope + rope), q_rank, 2.0 / q_rank ** 0.5)
    w.matrix(p + "self_attn.kv_a_proj_with_mqa.weight", rank + rope, hidden, 2.0 / hidden ** 0.5)
    w.norm(p + "self_attn.kv_a_layernorm.weight", rank)
    w.matrix(p + "self_attn.kv_b_proj.weight", heads * (nope + v), rank, 2.0 / rank ** 0.5)
    w.matrix(p + "self_attn.o_proj.weight", hidden, heads * v, 1.0 / (heads * v) ** 0.5)
    w.norm(p + "post_attention_layernorm.weight", hidden)


def deepseek_layers(w, c):
    """The decoder layers of a DeepSeek-V3-shaped config: dense below first_k_dense_replace, then
    sigmoid-routed experts with a positive correction bias (llama.cpp's -inf group mask agrees with
    transformers' 0 then) and a shared expert; then num_nextn_predict_layers next-token-prediction layers
    as DeepSeek-V3 stores them (a full layer plus embed_tokens, enorm, hnorm, eh_proj, shared_head)."""
    hidden, experts_count = c["hidden_size"], c["n_routed_experts"]

    def layer(p, sparse):
        latent_attention(w, p, c)
        if not sparse:
            dense_mlp(w, p, "mlp.", hidden, c["intermediate_size"])
            return
        experts(w, p, "mlp", ("gate_proj", "up_proj", "down_proj"), experts_count, hidden,
                c["moe_intermediate_size"], router_scale=0.35)
        w.vector(p + "mlp.gate.e_score_correction_bias", experts_count, 0.0, 0.4)
        dense_mlp(w, p, "mlp.shared_experts.", hidden, c["moe_intermediate_size"] * c["n_shared_experts"])

    w.matrix("model.embed_tokens.weight", VOCAB, hidden, 1.0)
    for i in range(c["num_hidden_layers"]):
        layer("model.layers.%d." % i, i >= c["first_k_dense_replace"])
    for i in range(c["num_nextn_predict_layers"]):
        mtp = "model.layers.%d." % (c["num_hidden_layers"] + i)
        layer(mtp, True)
        w.matrix(mtp + "embed_tokens.weight", VOCAB, hidden, 1.0)
        w.norm(mtp + "enorm.weight", hidden)
        w.norm(mtp + "hnorm.weight", hidden)
        w.matrix(mtp + "eh_proj.weight", hidden, 2 * hidden, 1.0 / hidden ** 0.5)
        w.norm(mtp + "shared_head.norm.weight", hidden)
        w.matrix(mtp + "shared_head.head.weight", VOCAB, hidden, 3.0 / hidden ** 0.5)
    w.norm("model.norm.weight", hidden)
    w.matrix("lm_head.weight", VOCAB, hidden, 3.0 / hidden ** 0.5)


DEEPSEEK = dict(COMMON, architectures=["DeepseekV3ForCausalLM"], num_hidden_layers=3, num_key_value_heads=4,
                intermediate_size=48, moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=2,
                n_shared_experts=1, routed_scaling_factor=2.5, norm_topk_prob=True, first_k_dense_replace=1,
                kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, rope_interleave=True,
                topk_method="noaux_tc", scoring_func="sigmoid", attention_bias=False, pad_token_id=256)
for _key in ("output_router_logits", "router_aux_loss_coef"):
    del DEEPSEEK[_key]


def deepseek_v3():
    """DeepSeek-V3's layout: q through q_a_proj / q_a_layernorm / q_b_proj (q_lora_rank 32), the latent
    attention's values narrower than its queries (16 against 16 + 8), YaRN (factor 8 over an original
    context of 128, mscale = mscale_all_dim = 1, so cos and sin stay unscaled and the scores scale by
    (0.1 ln 8 + 1)^2), a dense first layer, 8 experts in 4 groups of which 2 are kept, a shared expert and
    one next-token-prediction layer (model.layers.3)."""
    c = dict(DEEPSEEK, model_type="deepseek_v3", q_lora_rank=32, n_group=4, topk_group=2,
             num_nextn_predict_layers=1, max_position_embeddings=1024,
             rope_scaling={"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 128,
                           "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})
    w = Weights(1604)
    deepseek_layers(w, c)
    return c, w


def kimi_k2():
    """Kimi-K2's model_type (DeepseekV3ForCausalLM under "kimi_k2") with DeepSeek-V2-Lite's q_proj
    (q_lora_rank null), one expert group as Kimi-K2 has, no RoPE scaling and no next-token-prediction
    layer."""
    c = dict(DEEPSEEK, model_type="kimi_k2", q_lora_rank=None, n_group=1, topk_group=1,
             num_nextn_predict_layers=0, rope_theta=50000.0, rope_scaling=None)
    w = Weights(1605)
    deepseek_layers(w, c)
    return c, w


def fused(make):
    """The checkpoint as transformers 5 saves it: each layer's experts in two tensors,
    mlp.experts.gate_up_proj [E, 2I, H] (expert e's gate rows, then its up rows) and
    mlp.experts.down_proj [E, H, I], the same values as the per-expert twin."""
    def make_fused():
        config, w = make()
        config = dict(config, transformers_version="5.0.0")
        by_name = {t[0]: t for t in w.tensors}
        layers = sorted({name.split(".experts.")[0] for name in by_name if ".experts." in name})
        for block in layers:
            count = 1 + max(int(name[len(block) + 9:].split(".")[0]) for name in by_name
                            if name.startswith(block + ".experts."))
            gate_up, down = [], []
            for e in range(count):
                x = "%s.experts.%d." % (block, e)
                gate_up += by_name.pop(x + "gate_proj.weight")[2] + by_name.pop(x + "up_proj.weight")[2]
                d = by_name.pop(x + "down_proj.weight")
                down += d[2]
            width = d[1][1]
            by_name[block + ".experts.gate_up_proj"] = (block + ".experts.gate_up_proj",
                                                         (count, 2 * width, d[1][0]), gate_up)
            by_name[block + ".experts.down_proj"] = (block + ".experts.down_proj", (count, d[1][0], width), down)
        w.tensors = list(by_name.values())
        return config, w
    return make_fused


def write_checkpoints(folder, makers):
    """Writes each (name, make) of `makers` as tests/data/<folder>/<name>: config.json, model.safetensors and
    the demo's tokenizer files. Shared by the tiny-checkpoint scripts (make-tiny-gemma3.py)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    for name, make in makers:
        out = os.path.join(args.repo, "tests", "data", folder, name)
        os.makedirs(out, exist_ok=True)
        config, weights = make()
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        write_safetensors(os.path.join(out, "model.safetensors"), weights.tensors)
        for t in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(args.repo, "resources", "demo", t), os.path.join(out, t))


def main():
    write_checkpoints("moe", (("qwen3-moe-tiny", qwen3_moe), ("mixtral-tiny", mixtral), ("glm4-moe-tiny", glm4_moe),
                              ("qwen3-moe-tiny-fused", fused(qwen3_moe)), ("glm4-moe-tiny-fused", fused(glm4_moe)),
                              ("deepseek-v3-tiny", deepseek_v3), ("kimi-k2-tiny", kimi_k2)))


if __name__ == "__main__":
    main()
