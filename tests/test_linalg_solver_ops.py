"""Factorizations and solvers against CPU: Cholesky (linalg.cholesky[_ex],
cholesky, cholesky_solve, cholesky_inverse), triangular solves
(linalg.solve_triangular, triangular_solve) and LU with partial pivoting
(linalg.lu_factor[_ex], linalg.lu, lu_unpack, linalg.lu_solve, and
linalg.solve / inv / det / slogdet / logdet over it): batches and
broadcasting, left / right and upper / lower forms, singular and
non-positive-definite inputs (info and the same errors), empty matrices,
and gradients."""

from __future__ import annotations

import pytest
import torch

from tpu_testing import assert_same, to_tpu

TOL = dict(rtol=1e-4, atol=1e-4)


def rand(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def spd(shape, seed=0, dtype=torch.float32):
    a = rand(shape, seed, dtype)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


def well_conditioned(shape, seed=0):
    return rand(shape, seed) + 3 * torch.eye(shape[-1])


def check_grads(fn, *inputs, **tol):
    """Outputs and the gradients of every input agree with CPU."""
    tol = tol or TOL
    cpu = [x.clone().requires_grad_() for x in inputs]
    tpu = [to_tpu(x).requires_grad_() for x in inputs]
    yc, yt = fn(*cpu), fn(*tpu)
    yc = yc if isinstance(yc, (tuple, list)) else (yc,)
    yt = yt if isinstance(yt, (tuple, list)) else (yt,)
    loss_c = sum((y * rand(y.shape, seed=9 + i)).sum() for i, y in enumerate(yc) if y.is_floating_point())
    loss_t = sum((y * to_tpu(rand(y.shape, seed=9 + i))).sum() for i, y in enumerate(yt) if y.is_floating_point())
    loss_c.backward()
    loss_t.backward()
    for c, t in zip(yc, yt):
        torch.testing.assert_close(t.cpu(), c, **tol)
    for c, t in zip(cpu, tpu):
        torch.testing.assert_close(t.grad.cpu(), c.grad, **tol)


# ---- Cholesky ----------------------------------------------------------------------


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_ex(upper):
    assert_same(lambda a: torch.linalg.cholesky_ex(a, upper=upper), spd((2, 3, 4, 4)), **TOL)
    assert_same(lambda a: torch.linalg.cholesky(a, upper=upper), spd((5, 5)), **TOL)
    assert_same(lambda a: torch.cholesky(a, upper=upper), spd((5, 5)), **TOL)
    assert_same(lambda a: torch.linalg.cholesky(a), spd((5, 5), dtype=torch.float64), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_only_its_triangle(upper):
    # LAPACK's uplo: the upper factor reads the upper triangle, the lower one
    # the lower triangle; the other triangle may hold anything.
    a = spd((2, 4, 4)) + torch.triu(rand((2, 4, 4), seed=3), 1) * (1 if upper else 0)
    a = a + torch.tril(rand((2, 4, 4), seed=4), -1) * (0 if upper else 1)
    assert_same(lambda t: torch.linalg.cholesky_ex(t, upper=upper), a, **TOL)
    assert_same(lambda t: torch.linalg.cholesky(t, upper=upper), torch.tensor([[4.0, 2.0], [0.0, 3.0]]), **TOL)
    # not positive-definite in the triangle read: the same info as LAPACK
    bad = spd((4, 4))
    if upper:
        bad[1, 3] = 100.0
    else:
        bad[3, 1] = 100.0
    assert_same(lambda t: torch.linalg.cholesky_ex(t, upper=upper).info, bad)


def test_cholesky_not_positive_definite():
    a = spd((3, 4, 4))
    a[1, 2, 2] = -100.0
    l_cpu, info_cpu = torch.linalg.cholesky_ex(a)
    _, info = torch.linalg.cholesky_ex(to_tpu(a))
    assert info.cpu().tolist() == info_cpu.tolist() == [0, 3, 0]
    assert_same(torch.linalg.cholesky, a)  # raises LinAlgError on both
    assert_same(lambda t: torch.linalg.cholesky_ex(t, check_errors=True), a)


def test_cholesky_bad_input():
    assert_same(torch.linalg.cholesky, rand((3, 4)))
    assert_same(torch.linalg.cholesky, torch.ones(3, 3, dtype=torch.int64))
    assert_same(torch.linalg.cholesky, torch.zeros(0, 0))
    assert_same(torch.linalg.cholesky, torch.zeros(2, 0, 0))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    f = torch.linalg.cholesky(spd((2, 4, 4)), upper=upper)
    assert_same(lambda b, f: torch.cholesky_solve(b, f, upper=upper), rand((2, 4, 3)), f, **TOL)
    assert_same(lambda b, f: torch.cholesky_solve(b, f, upper=upper), rand((3, 1, 4, 2)), f, **TOL)  # broadcast
    assert_same(lambda f: torch.cholesky_inverse(f, upper=upper), f[0], **TOL)
    assert_same(lambda f: torch.cholesky_inverse(f, upper=upper), f, **TOL)


def test_cholesky_gradients():
    check_grads(torch.linalg.cholesky, spd((2, 4, 4)))
    f = torch.linalg.cholesky(spd((4, 4)))
    check_grads(torch.cholesky_solve, rand((4, 2)), f)
    check_grads(torch.cholesky_inverse, f)


# ---- triangular solves -------------------------------------------------------------


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    a = well_conditioned((2, 4, 4))
    b = rand((2, 4, 3) if left else (2, 3, 4), seed=1)
    fn = lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)
    assert_same(fn, a, b, **TOL)
    assert_same(fn, a[0], b, **TOL)  # batch broadcast
    assert_same(fn, a.mT, b, **TOL)  # non-contiguous
    check_grads(fn, a, b)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
def test_triangular_solve(upper, transpose):
    fn = lambda b, a: torch.triangular_solve(b, a, upper=upper, transpose=transpose)
    assert_same(fn, rand((2, 4, 3), seed=1), well_conditioned((2, 4, 4)), **TOL)
    assert_same(fn, rand((2, 4, 3), seed=1), well_conditioned((4, 4)), **TOL)
    check_grads(lambda b, a: fn(b, a)[0], rand((4, 2), seed=1), well_conditioned((4, 4)))


def test_triangular_bad_shapes():
    assert_same(lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), rand((3, 3)), rand((4, 2)))
    assert_same(lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), rand((3, 3)), rand((0, 3, 2)))


# ---- LU ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5), (3, 5), (5, 3), (2, 1, 3, 3), (0, 3, 3), (1, 1)])
def test_lu_factor_and_lu(shape):
    a = rand(shape)
    assert_same(torch.linalg.lu_factor_ex, a, **TOL)
    assert_same(torch.linalg.lu, a, **TOL)
    assert_same(lambda t: torch.lu_unpack(*torch.linalg.lu_factor(t)), a, **TOL)


def test_lu_singular_info():
    a = rand((3, 4, 4))
    a[1, :, 2] = 0  # a zero column: the third pivot is zero
    assert_same(torch.linalg.lu_factor_ex, a, **TOL)
    assert_same(lambda t: torch.linalg.lu_factor_ex(t)[2], torch.zeros(2, 3, 3))


# Beyond 32 columns the factorization is blocked (panels of 16, padded to
# whole panels): the pivots must still be LAPACK's, in every panel.
@pytest.mark.parametrize(
    "shape,dtype",
    [((100, 100), torch.float64), ((2, 70, 45), torch.float64), ((45, 70), torch.float64),
     ((3, 50, 50), torch.complex128), ((64, 64), torch.float32)],
)
def test_blocked_lu_matches_lapack(shape, dtype):
    a = rand(shape, dtype=dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-9)
    lu, piv, info = torch.linalg.lu_factor_ex(a)
    lu_t, piv_t, info_t = torch.linalg.lu_factor_ex(to_tpu(a))
    assert torch.equal(piv_t.cpu(), piv) and torch.equal(info_t.cpu(), info)
    torch.testing.assert_close(lu_t.cpu(), lu, **tol)
    assert_same(torch.linalg.solve, a[..., :45, :45], rand(shape[:-2] + (45, 2), seed=1, dtype=dtype), **tol)


def test_blocked_lu_zero_pivots_in_later_panels():
    a = rand((3, 80, 80), dtype=torch.float64)
    a[0, :, 50] = 0  # the first zero pivot in the fourth panel
    a[1, :, 79] = 0  # in the last column (a padded panel)
    a[2, :, 20] = 0
    a[2, :, 60] = 0
    lu, piv, info = torch.linalg.lu_factor_ex(a)
    lu_t, piv_t, info_t = torch.linalg.lu_factor_ex(to_tpu(a))
    assert info.tolist() == [51, 80, 21]
    assert torch.equal(info_t.cpu(), info) and torch.equal(piv_t.cpu(), piv)
    torch.testing.assert_close(lu_t.cpu(), lu, rtol=1e-9, atol=1e-9)


def test_blocked_lu_non_finite_stays_in_its_columns():
    a = rand((40, 40), dtype=torch.float64)
    a[35, 30] = float("inf")  # reaches later columns only through real arithmetic
    a[5, 38] = float("nan")
    assert_same(torch.linalg.lu_factor, a, rtol=1e-9, atol=1e-9)


def test_lu_unpack_flags():
    lu, piv = torch.linalg.lu_factor(rand((2, 4, 4)))
    assert_same(lambda l, p: torch.lu_unpack(l, p, unpack_data=False), lu, piv, **TOL)
    assert_same(lambda l, p: torch.lu_unpack(l, p, unpack_pivots=False), lu, piv, **TOL)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    lu, piv = torch.linalg.lu_factor(rand((2, 4, 4)))
    b = rand((2, 4, 3) if left else (2, 3, 4), seed=1)
    assert_same(lambda l, p, b: torch.linalg.lu_solve(l, p, b, left=left, adjoint=adjoint), lu, piv, b, **TOL)


def test_solve_inv_det_slogdet():
    a = rand((2, 4, 4))
    assert_same(torch.linalg.solve, a, rand((2, 4, 3), seed=1), **TOL)
    assert_same(torch.linalg.solve, a, rand((2, 4), seed=1), **TOL)  # batched vectors
    assert_same(torch.linalg.solve, a, rand((4,), seed=1), **TOL)
    assert_same(lambda a, b: torch.linalg.solve(a, b, left=False), a, rand((2, 3, 4), seed=1), **TOL)
    assert_same(torch.linalg.solve, a[0], rand((3, 4, 2), seed=1), **TOL)  # broadcast
    assert_same(torch.linalg.inv, a, **TOL)
    assert_same(torch.linalg.inv_ex, a, **TOL)
    assert_same(torch.linalg.det, a, **TOL)
    assert_same(torch.linalg.slogdet, a, **TOL)
    assert_same(torch.logdet, spd((3, 3)), **TOL)
    assert_same(torch.linalg.matrix_power, a, -2, **TOL)
    assert_same(torch.linalg.det, torch.zeros(0, 0))
    assert_same(torch.linalg.det, rand((3, 3), dtype=torch.float64), rtol=1e-10, atol=1e-10)


def test_singular_errors():
    a = rand((4, 4))
    a[:, 1] = 0
    assert_same(torch.linalg.inv, a)  # LinAlgError on both
    assert_same(torch.linalg.solve, a, rand((4, 2)))
    assert_same(lambda t: torch.linalg.inv_ex(t)[1], a)
    assert_same(torch.linalg.det, a, **TOL)
    assert_same(torch.linalg.slogdet, a, **TOL)


def test_lu_family_gradients():
    a = well_conditioned((2, 3, 3))
    check_grads(torch.linalg.det, a)
    check_grads(lambda t: torch.linalg.slogdet(t)[1], a)
    check_grads(torch.linalg.inv, a)
    check_grads(torch.linalg.solve, a, rand((2, 3, 2), seed=1))
    check_grads(lambda t: torch.linalg.lu_factor(t)[0], a)
    check_grads(lambda t: torch.linalg.lu(t)[1:], rand((4, 3)))
