"""Python numbers meeting float16 / bfloat16 tensors give CPU's results bit
for bit: mul, div (every rounding mode), floor_divide, addcmul / addcdiv and
lerp take the number in float32 and round once, as CPU's and CUDA's kernels
do; add and sub round it to the tensor's dtype first, as CPU's do (within
one unit in the last place where CPU's own loops disagree). Rounding
the number first made f16 `x / 65536` zero and bf16 `x * 1.7` 1% off."""

from __future__ import annotations

import pytest
import torch

from tpu_testing import TPU

CASES = {
    "mul": lambda x, y: x * 1.7,
    "rmul": lambda x, y: 1.7 * x,
    "mul_": lambda x, y: x.clone().mul_(1.7),
    "div": lambda x, y: x / 1.7,
    "div_tiny": lambda x, y: x / 65536.0,
    "mul_tiny": lambda x, y: x * 1e-6,
    "mul_huge": lambda x, y: x * 70000.0,
    "rdiv": lambda x, y: 1.7 / x,
    "floor_divide": lambda x, y: x // 0.1,
    "div_floor": lambda x, y: torch.div(x, 0.1, rounding_mode="floor"),
    "div_trunc": lambda x, y: torch.div(x, 0.1, rounding_mode="trunc"),
    "mul_cpu_tensor": lambda x, y: x * torch.tensor(1.7),
    "add": lambda x, y: x + 1.7,
    "sub": lambda x, y: x - 1.7,
    "rsub": lambda x, y: 1.7 - x,
    "add_alpha": lambda x, y: torch.add(x, y, alpha=1.7),
    "sub_alpha": lambda x, y: torch.sub(x, y, alpha=1.7),
    "addcmul": lambda x, y: torch.addcmul(x, x, y, value=1.7),
    "addcdiv": lambda x, y: torch.addcdiv(x, x, y, value=1.7),
    "lerp": lambda x, y: torch.lerp(x, y, 0.3),
    "lerp_tensor": lambda x, y: torch.lerp(x, y, y / 4),
}

FUSED = {"add_alpha", "sub_alpha", "addcmul", "addcdiv"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_same_bits_as_cpu(case, dtype):
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(3000, generator=gen) * 100 + 0.5).to(dtype)
    y = (torch.rand(3000, generator=gen) + 0.5).to(dtype)
    fn = CASES[case]
    expected = fn(x, y)
    actual = fn(x.to(TPU), y.to(TPU)).cpu()
    assert actual.dtype == expected.dtype
    # CPU itself rounds a * b + c once in its vectorized loop and twice in
    # the loop over the last few elements: allow one unit in the last place.
    rtol = torch.finfo(dtype).eps if case in FUSED else 0
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=0, equal_nan=True)


def test_float16_division_by_a_large_number_is_not_zero():
    x = torch.tensor([1000.0, 3.0, 0.5, 60000.0], dtype=torch.float16)
    expected = x / 65536.0
    assert (expected != 0).all()
    torch.testing.assert_close((x.to(TPU) / 65536.0).cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("op", [
    torch.fmod, torch.remainder, torch.atan2, torch.floor_divide, torch.xlogy, torch.pow,
    lambda a, b: torch.add(a, b, alpha=2), lambda a, b: torch.sub(a, b, alpha=3),
    lambda a, b: torch.addcmul(a, b, b), lambda a, b: torch.addcdiv(a, b, b, value=2),
])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_integer_operands_round_to_the_reduced_result_first(op, dtype):
    # TensorIterator casts an int16 2049 to f16 2048 (and int32 2**31 - 1
    # to inf) before the op computes in f32.
    a = torch.tensor([2049, 2**15 - 1, -2047, 3], dtype=torch.int16)
    big = torch.tensor([2**31 - 1, -5, 7, 1], dtype=torch.int32)
    b = torch.tensor([2.0, 0.5, -3.0, 1.0], dtype=dtype)
    for x in (a, big):
        want = op(x, b)
        got = op(x.to("tpu"), b.to("tpu"))
        assert got.dtype == want.dtype
        # One unit in the last place for the transcendental ones (xlogy).
        ulp = 2e-3 if dtype == torch.float16 else 1.6e-2
        torch.testing.assert_close(got.cpu(), want, equal_nan=True, rtol=ulp, atol=0)
