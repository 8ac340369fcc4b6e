#!/usr/bin/env python3
"""Train QuantScope's bundled demo checkpoint (resources/demo/) and its test reference.

A tiny Qwen3 (2 decoder layers, hidden 256, intermediate 768, 4 query heads of dim 64, 2 KV heads,
per-head q/k RMSNorm, RoPE theta 10000, tied embeddings) over a byte-level vocabulary, trained on
Edith Wharton's "The Verdict" (public domain) as raw bytes. The last ~12% of the text (cut at a line
start) is held out for evaluation and never trained on.

Everything is self-contained: the model is written here in plain PyTorch and follows Hugging Face's
modeling_qwen3.py exactly (RMSNorm with weight, q_norm/k_norm per head before RoPE, rotate_half RoPE,
GQA by repeating KV heads, SiLU-gated MLP, lm_head tied to the embedding), and the safetensors file is
written by a small writer below, so only python3-torch is needed (Debian: apt-get install python3-torch;
run it with /usr/bin/python3 when another python3 comes first on PATH).

Deterministic: fixed seed, CPU only, 2 threads, deterministic algorithms. A run takes a few minutes.

Outputs (relative to the repository root):
  resources/text/the-verdict.txt         the full text (copied from --text), with SOURCE.md
  resources/demo/config.json             Qwen3ForCausalLM config
  resources/demo/model.safetensors       BF16 weights, Hugging Face tensor names, no lm_head (tied)
  resources/demo/tokenizer.json          byte-level BPE: 256 byte symbols = ids 0..255, no merges,
                                         <|endoftext|> = 256
  resources/demo/tokenizer_config.json, generation_config.json, README.md
  resources/demo/calibration.txt         the training part of the text
  resources/demo/eval.txt                the held-out part
  tests/data/demo/reference_logits.safetensors  logits [128, vocab] f32 of the BF16 model on the first
                                         128 bytes of eval.txt (computed in float64) + the token ids
  tests/data/demo/reference.json         the ids, held-out perplexities, how they were computed

Usage: /usr/bin/python3 scripts/train-demo-model.py [--steps 300] [--text PATH] [--repo PATH]
"""
import argparse
import json
import math
import os
import shutil
import struct
import sys
import time

# Idle OpenMP threads sleep instead of spinning: on a busy machine spinning threads made each step
# several times slower. Set before torch starts its thread pool.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# ---------------------------------------------------------------------------------------------------
# Architecture

CONFIG = dict(
    hidden_size=256,
    intermediate_size=768,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    rms_norm_eps=1e-6,
    rope_theta=10000.0,
    max_position_embeddings=1024,
    vocab_size=320,          # 256 bytes + <|endoftext|> (256), padded to a multiple of 64 as HF models pad
    tie_word_embeddings=True,
)
EOT_ID = 256
NUM_TOKENS = 257             # ids the tokenizer can produce; 257..319 are padding rows


class RMSNorm(nn.Module):
    """Qwen3RMSNorm: x / sqrt(mean(x^2) + eps) * weight, computed in the input's float type."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rope_cos_sin(seq_len, head_dim, theta, dtype):
    # HF's default rotary embedding: inv_freq over even dims, emb = cat(freqs, freqs).
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    pos = torch.arange(seq_len, dtype=torch.float64)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.kv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        hidden = c["hidden_size"]
        self.q_proj = nn.Linear(hidden, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(hidden, self.kv * self.d, bias=False)
        self.v_proj = nn.Linear(hidden, self.kv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, hidden, bias=False)
        self.q_norm = RMSNorm(self.d, c["rms_norm_eps"])
        self.k_norm = RMSNorm(self.d, c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.h, self.d)).transpose(1, 2)   # [b, h, t, d]
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv, self.d)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.h // self.kv                      # repeat_kv: query head i uses KV head i // rep
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = (q @ k.transpose(-1, -2)) * (self.d ** -0.5)
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = (p @ v).transpose(1, 2).reshape(b, t, self.h * self.d)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], c["hidden_size"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(DecoderLayer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class Qwen3ForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = Qwen3Model(c)
        # HF's _init_weights: normal(0, initializer_range) for linears and the embedding, norms at 1.
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, ids):
        x = self.model.embed_tokens(ids)
        cos, sin = rope_cos_sin(ids.shape[1], self.c["head_dim"], self.c["rope_theta"], x.dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        x = self.model.norm(x)
        return x @ self.model.embed_tokens.weight.t()          # tied lm_head

    def hf_state_dict(self):
        """Tensor name -> tensor with Hugging Face's names (no lm_head.weight: it is tied)."""
        return {name: p.detach() for name, p in self.named_parameters()}


# ---------------------------------------------------------------------------------------------------
# Files

def bytes_to_unicode():
    """GPT-2's byte -> printable unicode character map (as in Hugging Face's ByteLevel)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def tokenizer_json():
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": EOT_ID, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": dict(byte_level),
        "decoder": dict(byte_level),
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": []},
    }


def tokenizer_config_json():
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {str(EOT_ID): {"content": "<|endoftext|>", "lstrip": False, "normalized": False,
                                               "rstrip": False, "single_word": False, "special": True}},
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|endoftext|>",
        "errors": "replace",
        "model_max_length": CONFIG["max_position_embeddings"],
        "pad_token": "<|endoftext|>",
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }


def config_json():
    c = CONFIG
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": EOT_ID,
        "eos_token_id": EOT_ID,
        "head_dim": c["head_dim"],
        "hidden_act": "silu",
        "hidden_size": c["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": c["intermediate_size"],
        "max_position_embeddings": c["max_position_embeddings"],
        "max_window_layers": c["num_hidden_layers"],
        "model_type": "qwen3",
        "num_attention_heads": c["num_attention_heads"],
        "num_hidden_layers": c["num_hidden_layers"],
        "num_key_value_heads": c["num_key_value_heads"],
        "rms_norm_eps": c["rms_norm_eps"],
        "rope_scaling": None,
        "rope_theta": c["rope_theta"],
        "sliding_window": None,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.51.0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": c["vocab_size"],
    }


def tensor_bytes(t):
    t = t.contiguous().reshape(-1)
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    try:
        return t.numpy().tobytes()           # little-endian on every machine this runs on
    except (RuntimeError, TypeError, ImportError):
        fmt = {torch.int16: "h", torch.float32: "f", torch.int32: "i"}[t.dtype]
        return struct.pack("<%d%s" % (t.numel(), fmt), *t.tolist())


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> torch tensor (bfloat16, float32 or int32). Names are written sorted."""
    dtype_name = {torch.bfloat16: "BF16", torch.float32: "F32", torch.int32: "I32"}
    header = {"__metadata__": dict(metadata or {"format": "pt"})}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        data = tensor_bytes(t)
        header[name] = {"dtype": dtype_name[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for data in blobs:
            f.write(data)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


# ---------------------------------------------------------------------------------------------------
# Training and evaluation

def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


@torch.no_grad()
def held_out_nll(model, data, seq_len):
    """Mean NLL (nats per byte) on `data` cut into consecutive windows of seq_len bytes; each window is
    run on its own (no context from the previous one) and predicts its bytes 1..n-1."""
    total, count = 0.0, 0
    for start in range(0, len(data) - 1, seq_len):
        chunk = data[start:start + seq_len]
        if len(chunk) < 2:
            break
        logits = model(chunk[None, :-1])[0]
        total += F.cross_entropy(logits.double(), chunk[1:], reduction="sum").item()
        count += len(chunk) - 1
    return total / count


def bf16_copy(model, dtype):
    """The model with every weight rounded to BF16 (round to nearest even), then held in `dtype`."""
    ref = Qwen3ForCausalLM(model.c)
    ref.load_state_dict({k: v.bfloat16().to(torch.float32) for k, v in model.state_dict().items()})
    return ref.to(dtype).eval()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=os.path.dirname(here))
    ap.add_argument("--text", default=None, help="the-verdict.txt (default: resources/text/the-verdict.txt, "
                                                  "else /work/shared/data/text/the-verdict.txt)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--held-out", type=float, default=0.12)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--ref-bytes", type=int, default=128)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)

    repo = args.repo
    demo = os.path.join(repo, "resources", "demo")
    text_dir = os.path.join(repo, "resources", "text")
    test_dir = os.path.join(repo, "tests", "data", "demo")
    for d in (demo, text_dir, test_dir):
        os.makedirs(d, exist_ok=True)

    text_path = args.text
    if text_path is None:
        text_path = os.path.join(text_dir, "the-verdict.txt")
        if not os.path.exists(text_path):
            text_path = "/work/shared/data/text/the-verdict.txt"
    raw = open(text_path, "rb").read()
    raw.decode("utf-8")  # must be valid UTF-8
    dst = os.path.join(text_dir, "the-verdict.txt")
    if os.path.abspath(text_path) != os.path.abspath(dst):
        shutil.copyfile(text_path, dst)

    # Hold out the last ~12%: cut at the line start nearest to that point, so both parts are whole lines.
    target = len(raw) * (1.0 - args.held_out)
    cut = min((i + 1 for i, b in enumerate(raw[:-1]) if b == 0x0A), key=lambda c: abs(c - target))
    train_bytes, eval_bytes = raw[:cut], raw[cut:]
    open(os.path.join(demo, "calibration.txt"), "wb").write(train_bytes)
    open(os.path.join(demo, "eval.txt"), "wb").write(eval_bytes)
    train = torch.tensor(list(train_bytes), dtype=torch.long)
    held = torch.tensor(list(eval_bytes), dtype=torch.long)
    print(f"text: {len(raw)} bytes; train {len(train_bytes)}, held out {len(eval_bytes)}", flush=True)

    model = Qwen3ForCausalLM(CONFIG)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params:,}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed)

    t0 = time.time()
    c0 = time.process_time()
    history = []
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, args.warmup)
        starts = torch.randint(0, len(train) - args.seq_len - 1, (args.batch,), generator=gen)
        x = torch.stack([train[s:s + args.seq_len] for s in starts.tolist()])
        y = torch.stack([train[s + 1:s + args.seq_len + 1] for s in starts.tolist()])
        model.train()
        loss = F.cross_entropy(model(x).reshape(-1, CONFIG["vocab_size"]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            model.eval()
            nll = held_out_nll(model, held, args.seq_len)
            history.append({"step": step + 1, "train_loss": round(loss.item(), 4),
                            "held_out_ppl": round(math.exp(nll), 3)})
            print(f"step {step + 1:4d}  train loss {loss.item():.4f}  held-out ppl {math.exp(nll):.3f}  "
                  f"({time.time() - t0:.0f} s)", flush=True)
    train_seconds = time.time() - t0
    train_cpu_seconds = time.process_time() - c0
    model.eval()

    # The shipped model is the BF16 rounding; measure it (in float64) and the f32 original.
    ppl_f32 = math.exp(held_out_nll(model, held, args.seq_len))
    ref = bf16_copy(model, torch.float64)
    ppl_bf16 = math.exp(held_out_nll(ref, held, args.seq_len))
    train_ppl_bf16 = math.exp(held_out_nll(ref, train, args.seq_len))
    print(f"held-out perplexity per byte: f32 {ppl_f32:.3f}, bf16 {ppl_bf16:.3f}; "
          f"training text (bf16) {train_ppl_bf16:.3f}; trained in {train_seconds:.0f} s", flush=True)

    # --- resources/demo ---
    weights = {k: v.bfloat16() for k, v in model.hf_state_dict().items()}
    write_safetensors(os.path.join(demo, "model.safetensors"), weights)
    write_json(os.path.join(demo, "config.json"), config_json())
    write_json(os.path.join(demo, "generation_config.json"),
               {"bos_token_id": EOT_ID, "eos_token_id": EOT_ID, "pad_token_id": EOT_ID,
                "transformers_version": "4.51.0"})
    write_json(os.path.join(demo, "tokenizer.json"), tokenizer_json())
    write_json(os.path.join(demo, "tokenizer_config.json"), tokenizer_config_json())

    # --- tests/data/demo ---
    ref_ids = held[: args.ref_bytes]
    with torch.no_grad():
        ref_logits = ref(ref_ids[None, :])[0]
    write_safetensors(os.path.join(test_dir, "reference_logits.safetensors"),
                      {"logits": ref_logits.to(torch.float32), "token_ids": ref_ids.to(torch.int32)},
                      metadata={"format": "pt",
                                "source": "scripts/train-demo-model.py: BF16 weights, forward in float64"})
    reference = {
        "description": "Logits of resources/demo (its BF16 weights, forward pass in float64, stored as f32) "
                       "for the first %d bytes of resources/demo/eval.txt, one byte per token; "
                       "reference_logits.safetensors holds logits [%d, %d] and token_ids [%d]."
                       % (len(ref_ids), len(ref_ids), CONFIG["vocab_size"], len(ref_ids)),
        "token_ids": ref_ids.tolist(),
        "text": bytes(ref_ids.tolist()).decode("utf-8"),
        "held_out_perplexity": round(ppl_bf16, 6),
        "held_out_perplexity_f32_weights": round(ppl_f32, 6),
        "training_text_perplexity": round(train_ppl_bf16, 6),
        "perplexity_method": "exp(mean NLL per byte) over resources/demo/eval.txt cut into consecutive "
                             "windows of %d bytes, each run without earlier context, predicting bytes "
                             "1..n-1 of each window" % args.seq_len,
        "eval_window": args.seq_len,
        "argmax": ref_logits.argmax(-1).tolist(),
    }
    write_json(os.path.join(test_dir, "reference.json"), reference)

    write_readme(os.path.join(demo, "README.md"), args, n_params, len(train_bytes), len(eval_bytes),
                 ppl_bf16, ppl_f32, train_ppl_bf16, train_seconds, train_cpu_seconds, history)
    print("wrote", demo, "and", test_dir)


def write_readme(path, args, n_params, n_train, n_eval, ppl_bf16, ppl_f32, train_ppl, seconds, cpu_seconds, history):
    c = CONFIG
    curve = "\n".join(f"| {h['step']} | {h['train_loss']:.3f} | {h['held_out_ppl']:.2f} |" for h in history)
    text = f"""# QuantScope demo model

A tiny Qwen3 checkpoint bundled with QuantScope so that every feature (inspect, calibrate, quantize,
compare, export) can be tried and tested without downloading anything. It is a real language model,
but a very small one: it has read a single short story, one byte at a time.

| | |
|---|---|
| architecture | `Qwen3ForCausalLM` (`model_type` `qwen3`), loads in Hugging Face transformers |
| layers | {c['num_hidden_layers']} |
| hidden / intermediate | {c['hidden_size']} / {c['intermediate_size']} (SiLU-gated MLP) |
| attention | {c['num_attention_heads']} query heads, {c['num_key_value_heads']} KV heads (GQA), head_dim {c['head_dim']}, q/k RMSNorm, RoPE theta {c['rope_theta']:g} |
| vocabulary | bytes: id = byte value (0-255), `<|endoftext|>` = 256; embedding padded to {c['vocab_size']} rows |
| embeddings | tied (`lm_head` = `model.embed_tokens`; no `lm_head.weight` stored) |
| parameters | {n_params:,} |
| weights | `model.safetensors`, BF16 |
| context | {c['max_position_embeddings']} positions (trained on {args.seq_len}) |

## Files

- `config.json`, `generation_config.json`, `model.safetensors`: the model.
- `tokenizer.json`, `tokenizer_config.json`: a valid Hugging Face byte-level BPE tokenizer (GPT-2's
  byte-to-unicode alphabet as its 256 tokens, ids equal to the byte values, no merges), so any UTF-8
  text encodes to exactly its bytes.
- `calibration.txt`: the training part of the text ({n_train:,} bytes), used as calibration text.
- `eval.txt`: the held-out part ({n_eval:,} bytes, the last {n_eval / (n_train + n_eval):.1%} of the story, cut at the
  line start nearest to {1 - args.held_out:.0%}), never seen in training; used to evaluate perplexity and KL divergence.

## How it was made

`scripts/train-demo-model.py` (PyTorch on the CPU, 2 threads, seed {args.seed}, deterministic) trains a
self-contained re-implementation of Hugging Face's Qwen3 on `resources/text/the-verdict.txt` as bytes:
{args.steps} steps of AdamW (peak learning rate {args.lr:g}, betas 0.9/0.95, weight decay {args.weight_decay:g} on
matrices, {args.warmup} warm-up steps then cosine decay to 10%, gradient clipping at 1.0), batches of
{args.batch} random windows of {args.seq_len} bytes. Training took {seconds:.0f} s of wall time ({cpu_seconds:.0f} s of CPU time). The weights are then rounded to
BF16 (round to nearest even) and saved.

Held-out perplexity per byte on `eval.txt` (windows of {args.seq_len} bytes, each without earlier context,
predicting every byte but the window's first):

- **{ppl_bf16:.2f}** for the shipped BF16 weights (the f32 weights before rounding: {ppl_f32:.2f});
- {train_ppl:.2f} on the training text (the same measure on `calibration.txt`).

The gap between the two says that the model has partly memorised its one story, which is expected
for {n_params/1e6:.1f}M parameters and 18 KB of text. That is fine for its purpose: comparing how much
different quantization methods change its next-token distributions (KL divergence), not writing prose.

Training curve (held-out perplexity of the f32 weights):

| step | training loss (nats/byte) | held-out perplexity |
|---|---|---|
{curve}

`tests/data/demo/reference_logits.safetensors` holds this model's logits for the first 128 bytes of
`eval.txt` (BF16 weights, forward pass in float64); `tests/model/test_demo_model.cpp` checks
QuantScope's forward pass against them.

## Licence

The text is Edith Wharton's "The Verdict" (1908), in the public domain (see
`resources/text/SOURCE.md`). The weights and the tokenizer files were made by the QuantScope
project with the script above and are distributed under the project's licence.
"""
    open(path, "w", encoding="utf-8").write(text)


if __name__ == "__main__":
    sys.exit(main())
