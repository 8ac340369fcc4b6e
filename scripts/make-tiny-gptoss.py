#!/usr/bin/env python3
"""Write the tiny random gpt-oss checkpoint of the tests: tests/data/gptoss/gptoss-tiny.

GptOssForCausalLM (model_type gpt_oss) in transformers' layout: q/k/v/o projections with biases, the
per-head attention sinks `self_attn.sinks`, the router `mlp.router.{weight,bias}`, and the experts
stacked as GptOssExperts holds them, x @ W: `mlp.experts.gate_up_proj` [E, hidden, 2I] (gate and up
interleaved: gate = [..., ::2], up = [..., 1::2]), `gate_up_proj_bias` [E, 2I], `down_proj` [E, I, hidden],
`down_proj_bias` [E, hidden]. The experts and the attention projections are BF16 (as OpenAI's dequantized
checkpoints store them, and to keep the file small); embeddings, norms, biases, sinks, router, lm_head F32.
Hidden 32, 4 query / 2 KV heads of head_dim 64, 4 layers alternating sliding_attention (window 32) / full_attention, YaRN RoPE (factor 32,
beta_fast 32, beta_slow 1, original context 4096, truncate true: there llama.cpp and transformers agree),
4 experts of width 32, top 2, swiglu_limit 7 (the expert weights are large enough that the clamp bites).

The safetensors writer and the random weights are make-tiny-moe.py's (shared, not copied).
Pure Python: python3 scripts/make-tiny-gptoss.py [--repo PATH]
"""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location("make_tiny_moe", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-tiny-moe.py"))
tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny)

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FF, LAYERS, WINDOW, EXPERTS, TOP_K = 32, 4, 2, 64, 32, 4, 32, 4, 2


class GptOssWeights(tiny.Weights):
    def vector(self, name, n, scale):
        self.tensors.append((name, (n,), [self.rng.gauss(0.0, scale) for _ in range(n)]))

    def bf16_matrix(self, name, rows, cols, scale):
        self.stacked(name, (rows, cols), scale)

    def stacked(self, name, shape, scale):
        count = 1
        for d in shape:
            count *= d
        self.tensors.append((name, shape, [self.rng.gauss(0.0, scale) for _ in range(count)], "BF16"))


def layer(w, p):
    s = 1.0 / HIDDEN ** 0.5
    w.norm(p + "input_layernorm.weight", HIDDEN)
    for name, rows in (("q_proj", HEADS * HEAD_DIM), ("k_proj", KV_HEADS * HEAD_DIM), ("v_proj", KV_HEADS * HEAD_DIM)):
        w.bf16_matrix(p + "self_attn.%s.weight" % name, rows, HIDDEN, s)
        w.vector(p + "self_attn.%s.bias" % name, rows, 0.2)
    w.bf16_matrix(p + "self_attn.o_proj.weight", HIDDEN, HEADS * HEAD_DIM, 1.0 / (HEADS * HEAD_DIM) ** 0.5)
    w.vector(p + "self_attn.o_proj.bias", HIDDEN, 0.1)
    w.vector(p + "self_attn.sinks", HEADS, 1.5)   # some heads park much of their weight in the sink
    w.norm(p + "post_attention_layernorm.weight", HIDDEN)
    w.matrix(p + "mlp.router.weight", EXPERTS, HIDDEN, 1.0)   # a sharp router
    w.vector(p + "mlp.router.bias", EXPERTS, 0.5)
    # gate_up outputs of standard deviation ~4: the clamp at 7 is reached by a few percent of them.
    w.stacked(p + "mlp.experts.gate_up_proj", (EXPERTS, HIDDEN, 2 * FF), 4.0 / HIDDEN ** 0.5)
    w.stacked(p + "mlp.experts.gate_up_proj_bias", (EXPERTS, 2 * FF), 0.5)
    w.stacked(p + "mlp.experts.down_proj", (EXPERTS, FF, HIDDEN), 0.5 / FF ** 0.5)
    w.stacked(p + "mlp.experts.down_proj_bias", (EXPERTS, HIDDEN), 0.1)


def gpt_oss():
    c = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": HIDDEN, "intermediate_size": FF,
         "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
         "num_local_experts": EXPERTS, "num_experts_per_tok": TOP_K, "experts_per_token": TOP_K, "vocab_size": tiny.VOCAB,
         "max_position_embeddings": 131072, "initial_context_length": 4096, "rms_norm_eps": 1e-5, "rope_theta": 150000.0,
         "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                          "original_max_position_embeddings": 4096, "truncate": True},
         "sliding_window": WINDOW, "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(LAYERS)],
         "swiglu_limit": 7.0, "attention_bias": True, "attention_dropout": 0.0, "hidden_act": "silu", "tie_word_embeddings": False,
         "router_aux_loss_coef": 0.9, "output_router_logits": False, "use_cache": True, "initializer_range": 0.02,
         "bos_token_id": 256, "eos_token_id": 256, "pad_token_id": 0, "torch_dtype": "float32", "transformers_version": "4.55.0"}
    w = GptOssWeights(1801)
    w.matrix("model.embed_tokens.weight", tiny.VOCAB, HIDDEN, 1.0)
    for i in range(LAYERS):
        layer(w, "model.layers.%d." % i)
    w.norm("model.norm.weight", HIDDEN)
    w.matrix("lm_head.weight", tiny.VOCAB, HIDDEN, 3.0 / HIDDEN ** 0.5)
    return c, w


def main():
    tiny.write_checkpoints("gptoss", (("gptoss-tiny", gpt_oss),))


if __name__ == "__main__":
    main()
