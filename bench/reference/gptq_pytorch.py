#!/usr/bin/env python3
"""GPTQ in PyTorch, as the chapter's reference writes it: the timing baseline of bench/gptq_vs_pytorch.sh.

What it follows: `gptq_quantize(weight, hessian, bits=4, group_size=128, act_order=False, damp=0.01,
block=128)` of the book chapter that docs/reference-algorithms.md describes (the seeds' GPTQ, the one
tests/data/quant/seed_reference.safetensors was computed with), and AutoGPTQ's `find_params` that it
calls for each group's range. Written for this project, not copied, with the same algorithm and the
same torch operations, so that its time is the reference's time:
  - dead inputs (H_ii == 0) get H_ii = 1 and a zero weight column; act-order sorts by H_ii;
  - damping 0.01 * mean(diag H) on the diagonal; torch.linalg.cholesky of the damped H,
    torch.cholesky_inverse of that factor (H^-1), and the upper Cholesky factor of H^-1;
  - blocks of 128 columns: inside a block each column's error updates the block's later columns
    (rank-one updates), and after the block one matmul updates every column after it;
  - a group's (scale, zero) per row from min/max of the weights as corrected so far, when the loop
    reaches the group's first column (range widened to include 0; zero = round(-min / scale)).
It is a baseline to time against, not a second implementation of the project: QuantScope's GPTQ is
core/quant/gptq.cpp.

Input: a .safetensors file with W [out, in] and H [in, in] (f32; `bench_gptq --write-problem=DIR`
writes the bench's 4096 x 4096 problem), optionally qs.codes / qs.scales / qs.zeros, QuantScope's
result for the same problem, to compare with. Output: one JSON line: the best wall and CPU time of
gptq_quantize over --repeats runs on --threads threads, torch's SGEMM rate at the same threads, the
SHA-256 of the codes, the output MSE (from H: mean over tokens and outputs of ((W - Q) x)^2 =
tr(D H D^T) / (2 rows), D = W - Q, in float64) and, when QuantScope's result is in the file, the share
of codes equal to its codes and its output MSE computed the same way.

Needs python3-torch (Debian; it brings numpy). Run it with /usr/bin/python3 when another python3
comes first on PATH. Usage:
  /usr/bin/python3 bench/reference/gptq_pytorch.py PROBLEM.safetensors [--threads 1] [--repeats 2]
                                                   [--control-f64]  (also GPTQ in float64, untimed)
  /usr/bin/python3 bench/reference/gptq_pytorch.py --check tests/data/quant/seed_reference.safetensors
                                                   (the seeds' codes reproduced? exit status 1 if not)
Set OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to --threads as well: torch.set_num_threads sets its
OpenMP team, but a pthreads OpenBLAS under torch takes its thread count from the environment.
"""
import argparse
import hashlib
import json
import struct
import sys
import time

import numpy as np
import torch

SAFETENSORS_DTYPES = {"F32": np.float32, "F64": np.float64, "U8": np.uint8, "I32": np.int32}


def read_safetensors(path):
    """name -> torch tensor, for the dtypes above (little-endian, as safetensors stores them)."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        values = np.frombuffer(data[begin:end], dtype=SAFETENSORS_DTYPES[info["dtype"]])
        tensors[name] = torch.from_numpy(values.reshape(info["shape"]).copy())
    return tensors


def find_params(x, bits):
    """Per row of x [rows, n]: AutoGPTQ's asymmetric (scale, zero) for the range of the row."""
    top = 2**bits - 1
    low = torch.clamp(x.min(dim=1).values, max=0)
    high = torch.clamp(x.max(dim=1).values, min=0)
    flat = (low == 0) & (high == 0)  # an all-zero row gets the range [-1, 1]
    low[flat], high[flat] = -1, 1
    scale = (high - low) / top
    zero = torch.round(-low / scale)
    return scale, zero


def upper_factor_of_inverse(h, damp):
    """The upper Cholesky factor U of (H + damp * mean(diag H) * I)^-1, as the reference forms it."""
    cols = h.shape[0]
    h = h + damp * torch.diag(h).mean() * torch.eye(cols, dtype=h.dtype)
    inverse = torch.cholesky_inverse(torch.linalg.cholesky(h))
    return torch.linalg.cholesky(inverse, upper=True)


@torch.no_grad()
def gptq_quantize(weight, hessian, bits=4, group_size=128, act_order=False, damp=0.01, block=128, *,
                  dtype=torch.float32):
    """weight [out, in], hessian [in, in] = 2 X^T X / n -> codes [out, in] (uint8), scales and zeros
    [out, groups], g_idx [in] (the group of each original column). `dtype` is not the reference's: it
    stays f32 for the timing; float64 only for the control run (how far f32 rounding alone moves codes)."""
    w = weight.to(dtype).clone()
    h = hessian.to(dtype).clone()
    rows, cols = w.shape
    dead = torch.diag(h) == 0  # inputs never active: their weights cannot matter
    h[dead, dead] = 1
    w[:, dead] = 0
    order = torch.argsort(torch.diag(h), descending=True) if act_order else torch.arange(cols)
    w, h = w[:, order], h[order][:, order]
    u = upper_factor_of_inverse(h, damp)

    top = 2**bits - 1
    groups = -(-cols // group_size)
    codes = torch.zeros_like(w)
    scales, zeros = torch.zeros(rows, groups, dtype=dtype), torch.zeros(rows, groups, dtype=dtype)
    for start in range(0, cols, block):
        end = min(start + block, cols)
        part = w[:, start:end].clone()  # the block's columns, corrected as the loop goes
        errors = torch.zeros(rows, end - start, dtype=dtype)
        u_block = u[start:end, start:end]
        for i in range(end - start):
            col = start + i
            g = col // group_size
            if col % group_size == 0:  # a group begins: its range from the weights corrected so far
                ahead = torch.cat((part[:, i:], w[:, end:]), 1)[:, :group_size]
                scales[:, g], zeros[:, g] = find_params(ahead, bits)
            q = (part[:, i] / scales[:, g] + zeros[:, g]).round().clamp(0, top)
            codes[:, col] = q
            error = (part[:, i] - scales[:, g] * (q - zeros[:, g])) / u_block[i, i]
            part[:, i:] -= error[:, None] * u_block[i, i:][None, :]  # onto the rest of the block
            errors[:, i] = error
        w[:, end:] -= errors @ u[start:end, end:]  # and onto every column after it, in one matmul
    back = torch.argsort(order)
    g_idx = (torch.arange(cols) // group_size)[back]
    return codes[:, back].to(torch.uint8), scales, zeros, g_idx.to(torch.int32)


def dequantize(codes, scales, zeros, g_idx):
    g = g_idx.long()
    return scales[:, g] * (codes.float() - zeros[:, g])


def output_mse(weight, quantized, hessian):
    """Mean over tokens and outputs of ((W - Q) x)^2 = tr(D H D^T) / (2 rows) for H = 2 X^T X / n."""
    d = (weight - quantized).double()
    return float(((d @ hessian.double()) * d).sum() / (2 * weight.shape[0]))


def timed(function, repeats):
    """(result, best wall seconds, best process CPU seconds) over `repeats` calls."""
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(repeats):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = function()
        best_wall = min(best_wall, time.perf_counter() - wall0)
        best_cpu = min(best_cpu, time.process_time() - cpu0)
    return result, best_wall, best_cpu


def sgemm_gflops(n, repeats=3):
    """torch.mm of n x n x n in f32 (what the reference's GEMMs run on), best of `repeats` after a warm-up."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    _, wall, cpu = timed(lambda: torch.mm(a, b), repeats)
    flops = 2.0 * n**3
    return flops / wall / 1e9, flops / cpu / 1e9


def equal_share(a, b):
    return float((a == b).double().mean())


def group_shares(a, b, group_size=128):
    """The share of equal codes in each group of columns (rounding differences grow along the columns)."""
    rows, cols = a.shape
    return (a == b).double().reshape(rows, cols // group_size, group_size).mean(dim=(0, 2)).tolist()


def check_against_seed_vectors(path):
    """Our gptq_quantize on the seeds' own vectors (W [128, 512], H) against the codes and scales the
    chapter's code produced, with and without act-order. Exit status 1 below 99.9 % equal codes."""
    tensors = read_safetensors(path)
    report = {}
    for name, act_order in (("gptq_g128", False), ("gptq_g128_act", True)):
        codes, scales, _, g_idx = gptq_quantize(tensors["W"], tensors["H"], act_order=act_order)
        report[name] = {
            "codes_equal_share": equal_share(codes, tensors[name + ".codes"].to(torch.uint8)),
            "scales_max_abs_diff": float((scales - tensors[name + ".scales"]).abs().max()),
            "g_idx_equal": bool((g_idx == tensors[name + ".g_idx"]).all()),
        }
    json.dump({"seed_vectors": report}, sys.stdout)
    print()
    return 0 if all(r["codes_equal_share"] >= 0.999 and r["g_idx_equal"] for r in report.values()) else 1


def compare_with_ours(tensors, codes, g_idx):
    """How QuantScope's result in the file compares: equal codes overall, in the first 4 groups (the
    seeds' vectors are 512 columns wide) and in the last group, and its output MSE."""
    ours = tensors["qs.codes"]
    by_group = group_shares(ours, codes)
    return {
        "codes_equal_share": equal_share(ours, codes),
        "codes_equal_share_first_4_groups": sum(by_group[:4]) / 4,
        "codes_equal_share_last_group": by_group[-1],
        "qs_output_mse": output_mse(
            tensors["W"], dequantize(ours, tensors["qs.scales"], tensors["qs.zeros"], g_idx), tensors["H"]
        ),
    }


def float64_control(tensors, codes):
    """The same GPTQ in float64: how many codes f32 rounding alone moves, for torch's and for ours."""
    w, h = tensors["W"], tensors["H"]
    exact, scales, zeros, g_idx = gptq_quantize(w, h, dtype=torch.float64)
    report = {
        "f64_output_mse": output_mse(w, dequantize(exact, scales.float(), zeros.float(), g_idx), h),
        "f64_codes_equal_share_torch": equal_share(exact, codes),
    }
    if "qs.codes" in tensors:
        report["f64_codes_equal_share_qs"] = equal_share(exact, tensors["qs.codes"])
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("problem", help=".safetensors with W, H (and qs.codes, qs.scales, qs.zeros)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs")
    parser.add_argument("--control-f64", action="store_true", help="also run GPTQ in float64 (untimed)")
    parser.add_argument("--check", action="store_true",
                        help="PROBLEM is tests/data/quant/seed_reference.safetensors: compare, no timing")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.check:
        return check_against_seed_vectors(args.problem)

    tensors = read_safetensors(args.problem)
    w, h = tensors["W"], tensors["H"]
    (codes, scales, zeros, g_idx), wall, cpu = timed(lambda: gptq_quantize(w, h), args.repeats)
    sgemm_wall, sgemm_cpu = sgemm_gflops(4096)
    report = {
        "threads": args.threads,
        "torch": torch.__version__,
        "shape": list(w.shape),
        "repeats": args.repeats,
        "wall_s": wall,
        "cpu_s": cpu,
        "sgemm_GFLOPs": sgemm_wall,
        "sgemm_cpu_GFLOPs": sgemm_cpu,
        "codes_sha256": hashlib.sha256(codes.numpy().tobytes()).hexdigest(),
        "output_mse": output_mse(w, dequantize(codes, scales, zeros, g_idx), h),
    }
    if "qs.codes" in tensors:
        report.update(compare_with_ours(tensors, codes, g_idx))
    if args.control_f64:
        report.update(float64_control(tensors, codes))
    json.dump(report, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
