"""Single ops whose lowering once grew badly with size, on tpu beside
PyTorch's CPU eager in one run: the first tpu call (compile included, in a
fresh process's memory tier unless the disk tier has the program), the
median of later calls, CPU's median, and the ratio of the medians.

    .venv/bin/python benchmarks/single_ops.py [--mode strict|fused] [--repeats 5] [--cases depthwise]

Each call runs to completion (the result is copied to the host). The cases
are the shapes at which a hunt found them slow (BENCHMARKS.md records the
figures before and after): embedding_bag with many bags, the backward of a
long 1-D upsample, top-k sampling over a vocabulary, istft's overlap-add,
F.fold, adaptive average pooling of a long signal, depthwise convolutions,
LU (`linalg.solve`), max reductions (softmax's, over short and long
rows), sums that keep the innermost dimension (a bias gradient's sum
over batch and sequence, alone and of a product), and scans (top-p
sampling's cumulative sum over a vocabulary, a long cumulative sum, the
positions of a long mask's true elements), and sorts (of a million
floats; medians, which select without sorting; of 64-bit keys: int64 argsort and
unique, float64, randperm's random keys). `--cases` picks cases by the
start of their names.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import torch_tpu


def embedding_bag(device):
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(50000, 16, generator=g).to(device)
    indices = torch.randint(0, 50000, (100000,), generator=g).to(device)
    offsets = torch.arange(0, 100000, 10).to(device)
    return lambda: F.embedding_bag(indices, weight, offsets, mode="sum")


def upsample_backward(device):
    x = torch.randn(1, 4, 10000, generator=torch.Generator().manual_seed(0)).to(device).requires_grad_()

    def step():
        x.grad = None
        F.interpolate(x, scale_factor=2, mode="linear").square().sum().backward()
        return x.grad

    return step


def topk_logits(device):
    logits = torch.randn(32, 50257, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: torch.topk(logits, 50).values


def istft(device):
    n_fft = 1024
    window = torch.hann_window(n_fft).to(device)
    signal = torch.randn(16000, generator=torch.Generator().manual_seed(0))
    spec = torch.stft(signal, n_fft, window=torch.hann_window(n_fft), return_complex=True).to(device)
    return lambda: torch.istft(spec, n_fft, window=window)


def fold(device):
    cols = torch.randn(2, 3 * 16 * 16, 17 * 17, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: F.fold(cols, (32, 32), 16)


def adaptive_avg_pool(device):
    x = torch.randn(4, 16, 100000, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: F.adaptive_avg_pool1d(x, 100000 // 3 + 1)


def depthwise_conv(shape, kernel):
    def make(device):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(shape, generator=g).to(device).requires_grad_()
        w = torch.randn(shape[1], 1, kernel, kernel, generator=g).to(device).requires_grad_()

        def step():
            x.grad = w.grad = None
            F.conv2d(x, w, padding=kernel // 2, groups=shape[1]).square().sum().backward()
            return x.grad

        return step

    return make


def solve(device):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(2048, 2048, generator=g).to(device)
    b = torch.randn(2048, 4, generator=g).to(device)
    return lambda: torch.linalg.solve(a, b)


def attention_softmax(device):
    scores = torch.randn(16, 8, 128, 128, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: torch.softmax(scores, -1)


def logits_max(device):
    logits = torch.randn(32, 50257, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: logits.amax(-1)


def column_sum(device):
    x = torch.randn(64, 64, 1024, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: x.sum((0, 1))


def column_sum_of_product(device):
    g = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(64, 64, 1024, generator=g).to(device) for _ in range(3))
    return lambda: (a * b + c).sum((0, 1))


def cumsum_rows(device):
    probs = torch.rand(32, 50257, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: probs.cumsum(-1)


def cumsum_long(device):
    x = torch.randn(1_000_000, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: x.cumsum(0)


def nonzero_long(device):
    mask = (torch.rand(1_000_000, generator=torch.Generator().manual_seed(0)) > 0.5).to(device)
    return lambda: mask.nonzero()


def sort_long(device):
    x = torch.randn(1_000_000, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: torch.sort(x).values


def median_long(device):
    x = torch.randn(1_000_000, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: x.median()


def median_rows(device):
    x = torch.randn(256, 4096, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: x.median(-1).values


def argsort_int64(device):
    x = torch.randint(-(2**62), 2**62, (1_000_000,), generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: torch.argsort(x)


def unique_labels(device):
    labels = torch.randint(0, 100_000, (1_000_000,), generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: torch.unique(labels)


def sort_float64(device):
    x = torch.randn(1_000_000, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(device)
    return lambda: torch.sort(x).values


def randperm_long(device):
    generator = torch.Generator(device).manual_seed(0)
    return lambda: torch.randperm(1_000_000, generator=generator, device=device)


CASES = {
    "embedding_bag 100k indices, 10k bags": embedding_bag,
    "linear upsample x2 backward, 10k samples": upsample_backward,
    "topk 50 of 32 x 50257": topk_logits,
    "istft n_fft 1024, 16k samples": istft,
    "F.fold 16x16 kernel, 32x32 output": fold,
    "adaptive_avg_pool1d 100k samples to a third": adaptive_avg_pool,
    "depthwise 3x3, 64 ch 256x256, fwd+bwd": depthwise_conv((1, 64, 256, 256), 3),
    "depthwise 7x7, 8 x 96 ch 56x56, fwd+bwd": depthwise_conv((8, 96, 56, 56), 7),
    "linalg.solve 2048 x 2048": solve,
    "softmax of 16 x 8 x 128 x 128 scores": attention_softmax,
    "amax over rows of 32 x 50257 logits": logits_max,
    "sum over dims 0, 1 of 64 x 64 x 1024": column_sum,
    "sum over dims 0, 1 of a * b + c, same shape": column_sum_of_product,
    "cumsum over rows of 32 x 50257": cumsum_rows,
    "cumsum of 1M values": cumsum_long,
    "nonzero of a 1M mask": nonzero_long,
    "sort of 1M values": sort_long,
    "median of 1M values": median_long,
    "median over rows of 256 x 4096": median_rows,
    "argsort of 1M int64": argsort_int64,
    "unique of 1M int64 labels": unique_labels,
    "sort of 1M float64": sort_float64,
    "randperm 1M": randperm_long,
}


def timed_ms(fn) -> float:
    start = time.perf_counter()
    fn().cpu()
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="strict", choices=["strict", "fused"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", nargs="*", help="only the cases whose names start with these")
    args = parser.parse_args()
    torch_tpu.set_eager_mode(args.mode)
    print(f"eager mode {args.mode}; ms per call, run to completion")
    print(f"{'case':44} {'tpu first':>10} {'tpu median':>11} {'cpu median':>11} {'tpu/cpu':>8}")
    for name, make in CASES.items():
        if args.cases and not any(name.startswith(c) for c in args.cases):
            continue
        tpu_fn, cpu_fn = make("tpu"), make("cpu")
        first = timed_ms(tpu_fn)
        tpu = statistics.median(timed_ms(tpu_fn) for _ in range(args.repeats))
        cpu_fn()
        cpu = statistics.median(timed_ms(cpu_fn) for _ in range(args.repeats))
        print(f"{name:44} {first:10.1f} {tpu:11.2f} {cpu:11.2f} {tpu / cpu:7.1f}x")


if __name__ == "__main__":
    main()
