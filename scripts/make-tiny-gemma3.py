#!/usr/bin/env python3
"""Write the tiny random Gemma 3 checkpoints of the tests: tests/data/gemma3/gemma3-text-tiny and gemma3-vlm-tiny.

gemma3-text-tiny is Gemma3ForCausalLM (model_type gemma3_text, `model.layers.N.`), gemma3-vlm-tiny is
Gemma3ForConditionalGeneration (model_type gemma3, its text tower under `model.language_model.` with
the config in text_config, as current transformers saves it) with a small fake vision tower
(`model.vision_tower.`, `model.multi_modal_projector.`) that QuantScope must copy through untouched.
Each layer has Gemma's four norms (input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
post_feedforward_layernorm) and q/k norms, stored as HF stores them (the model multiplies by 1 + w);
the embedding is tied. 6 layers: 5 sliding-window layers (window 16) and a global one, as Gemma 3's
pattern; the VLM's global layers use linear RoPE scaling (factor 8, as the 4B+ models).

The safetensors writer and the random weights are make-tiny-moe.py's (shared, not copied).
Pure Python: python3 scripts/make-tiny-gemma3.py [--repo PATH]
"""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location("make_tiny_moe", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-tiny-moe.py"))
tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny)

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FF, LAYERS, WINDOW = 32, 4, 2, 16, 48, 6, 16


class GemmaWeights(tiny.Weights):
    def gemma_norm(self, name, n):
        # Gemma stores w and scales by 1 + w: weights around 0.
        self.tensors.append((name, (n,), [self.rng.uniform(-0.3, 0.3) for _ in range(n)]))


def decoder(w, prefix):
    s = 1.0 / HIDDEN ** 0.5
    w.matrix(prefix + "embed_tokens.weight", tiny.VOCAB, HIDDEN, 0.5)
    for i in range(LAYERS):
        p = "%slayers.%d." % (prefix, i)
        w.gemma_norm(p + "input_layernorm.weight", HIDDEN)
        w.matrix(p + "self_attn.q_proj.weight", HEADS * HEAD_DIM, HIDDEN, s)
        w.matrix(p + "self_attn.k_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, s)
        w.matrix(p + "self_attn.v_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, s)
        w.matrix(p + "self_attn.o_proj.weight", HIDDEN, HEADS * HEAD_DIM, 1.0 / (HEADS * HEAD_DIM) ** 0.5)
        w.gemma_norm(p + "self_attn.q_norm.weight", HEAD_DIM)
        w.gemma_norm(p + "self_attn.k_norm.weight", HEAD_DIM)
        w.gemma_norm(p + "post_attention_layernorm.weight", HIDDEN)
        w.gemma_norm(p + "pre_feedforward_layernorm.weight", HIDDEN)
        w.matrix(p + "mlp.gate_proj.weight", FF, HIDDEN, 1.5 * s)
        w.matrix(p + "mlp.up_proj.weight", FF, HIDDEN, 1.5 * s)
        w.matrix(p + "mlp.down_proj.weight", HIDDEN, FF, 1.5 / FF ** 0.5)
        w.gemma_norm(p + "post_feedforward_layernorm.weight", HIDDEN)
    w.gemma_norm(prefix + "norm.weight", HIDDEN)


TEXT = {"hidden_size": HIDDEN, "intermediate_size": FF, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "vocab_size": tiny.VOCAB, "max_position_embeddings": 1024,
        "rms_norm_eps": 1e-6, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": HEAD_DIM,
        "sliding_window": WINDOW, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
        "final_logit_softcapping": None, "attn_logit_softcapping": None, "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 256, "eos_token_id": 256, "pad_token_id": 0,
        "initializer_range": 0.02, "use_cache": True, "torch_dtype": "float32"}


def text_model():
    c = dict(TEXT, architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", rope_scaling=None, tie_word_embeddings=True,
             layer_types=["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(LAYERS)],
             transformers_version="4.53.0")
    w = GemmaWeights(1701)
    decoder(w, "model.")
    return c, w


def vlm():
    text = dict(TEXT, model_type="gemma3_text", rope_scaling={"rope_type": "linear", "factor": 8.0}, sliding_window_pattern=6)
    vision = {"model_type": "siglip_vision_model", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
              "num_attention_heads": 2, "image_size": 8, "patch_size": 4, "num_channels": 3, "layer_norm_eps": 1e-6,
              "vision_use_head": False}
    c = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "text_config": text,
         "vision_config": vision, "mm_tokens_per_image": 4, "boi_token_index": 300, "eoi_token_index": 301,
         "image_token_index": 302, "initializer_range": 0.02, "torch_dtype": "float32", "transformers_version": "4.53.0"}
    w = GemmaWeights(1702)
    decoder(w, "model.language_model.")
    v = "model.vision_tower.vision_model."
    w.matrix(v + "embeddings.patch_embedding.weight", 16, 48, 0.2)
    w.tensors[-1] = (w.tensors[-1][0], (16, 3, 4, 4), w.tensors[-1][2])   # a conv kernel, rank 4
    w.matrix(v + "embeddings.position_embedding.weight", 4, 16, 0.2)
    l = v + "encoder.layers.0."
    for m in ("q_proj", "k_proj", "v_proj", "out_proj"):   # linears named like the text tower's: never quantized
        w.matrix(l + "self_attn.%s.weight" % m, 16, 16, 0.25)
        w.matrix(l + "self_attn.%s.bias" % m, 1, 16, 0.1)
        w.tensors[-1] = (w.tensors[-1][0], (16,), w.tensors[-1][2])
    w.matrix(l + "mlp.fc1.weight", 32, 16, 0.25)
    w.matrix(l + "mlp.fc2.weight", 16, 32, 0.25)
    for n in ("layer_norm1", "layer_norm2"):
        w.norm(l + n + ".weight", 16)
    w.norm(v + "post_layernorm.weight", 16)
    w.matrix("model.multi_modal_projector.mm_input_projection_weight", 16, HIDDEN, 0.25)
    w.gemma_norm("model.multi_modal_projector.mm_soft_emb_norm.weight", 16)
    return c, w


def main():
    tiny.write_checkpoints("gemma3", (("gemma3-text-tiny", text_model), ("gemma3-vlm-tiny", vlm)))


if __name__ == "__main__":
    main()
