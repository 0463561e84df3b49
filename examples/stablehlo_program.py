"""Driving the runtime directly: a StableHLO program built by hand.

Below the `tpu` PyTorch device sits a runtime that compiles StableHLO
programs through a shared cache and runs them on the PJRT plugin. This
example uses it directly: it writes one training step of a linear-regression
model as a StableHLO program with the builder, compiles it once through the
shared compile cache, and runs it 200 times on the device (the XLA CPU
plugin when no TPU or GPU is present), printing the platform, the loss curve
and steps per second.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from torch_tpu import runtime
from torch_tpu._C import hlo

N, D = 256, 8  # samples, features


def training_step_program() -> str:
    """(w, x, y, lr) -> (new_w, loss) for loss = mean((x @ w - y)^2)."""
    b = hlo.Builder("linear_regression_step")
    w = b.parameter("f32", [D])
    x = b.parameter("f32", [N, D])
    y = b.parameter("f32", [N])
    lr = b.parameter("f32", [])  # a runtime scalar: changing it never recompiles

    pred = b.dot_general(x, w, lhs_contracting=[1], rhs_contracting=[0])
    err = b.subtract(pred, y)
    zero = b.constant(0.0, "f32")

    def add(bb, args):
        return [bb.add(args[0], args[1])]

    (sq_sum,) = b.reduce([b.multiply(err, err)], [zero], [0], add)
    loss = b.divide(sq_sum, b.constant(float(N), "f32"))
    # d loss / d w = 2/N * x^T err
    grad = b.dot_general(x, err, lhs_contracting=[0], rhs_contracting=[0])
    grad = b.multiply(grad, b.constant(2.0 / N, "f32", [D]))
    step = b.multiply(b.broadcast_in_dim(lr, [D], []), grad)
    return b.build([b.subtract(w, step), loss])


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help; no options
    info = runtime.info()
    print(f"torch-tpu on platform '{info['platform']}' ({info['device_kind']}, "
          f"{info['device_count']} devices), XLA plugin API {info['pjrt_api_version']}")

    rng = np.random.default_rng(0)
    true_w = rng.standard_normal(D).astype(np.float32)
    x_host = rng.standard_normal((N, D)).astype(np.float32)
    y_host = (x_host @ true_w + 0.01 * rng.standard_normal(N)).astype(np.float32)

    client = runtime.client()
    step = runtime.compile(training_step_program())
    w = client.to_device(np.zeros(D, np.float32))
    x = client.to_device(x_host)
    y = client.to_device(y_host)

    losses = []
    steps = 200
    start = time.perf_counter()
    for i in range(steps):
        lr = client.to_device(np.asarray(0.1 if i < 100 else 0.05, np.float32))
        w, loss = step.execute([w, x, y, lr])
        if i % 20 == 0 or i == steps - 1:
            losses.append((i, float(loss.to_numpy())))
    w.block_until_ready()
    elapsed = time.perf_counter() - start

    for i, value in losses:
        print(f"step {i:4d}  loss {value:.6f}")
    error = float(np.abs(w.to_numpy() - true_w).max())
    print(f"{steps / elapsed:.0f} steps/s; max |w - w_true| = {error:.4f}")
    stats = runtime.cache_stats()
    print(f"compile cache: {stats['requests']} requests, {stats['compiles']} compiles, "
          f"{stats['disk_hits']} disk hits")


if __name__ == "__main__":
    main()
