"""Bad input raises as on CPU, found by a fuzz of op_db's error inputs and
hand-written cases: the same exception type and a message that names the
problem, never a crash, a hang or a value where CPU refuses."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import TPU, assert_same


def raises_like_cpu(fn, *args, match=None):
    """fn raises on CPU and on tpu, the same exception type (and `match`)."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    tpu_args = [a.to(TPU) if isinstance(a, torch.Tensor) else a for a in args]
    with pytest.raises(type(cpu.value), match=match):
        out = fn(*tpu_args)
        if isinstance(out, torch.Tensor):
            out.cpu()  # deferred checks raise at the next sync
        torch.tpu.synchronize()


def test_set_beyond_the_storage_grows_it_as_on_cpu():
    # Crashed: CPU's set_ grew the storage with a host memcpy of device memory.
    def grow(x):
        y = torch.empty(0, device=x.device).set_(x.untyped_storage(), 1, (6,), (1,))
        y[3:] = 7  # the grown part is uninitialized on CPU
        return y, x
    assert_same(grow, torch.arange(4.0))
    # A float64 view over float32 storage, one element past its end.
    assert_same(lambda x: torch.empty(0, dtype=torch.float64, device=x.device).set_(x.untyped_storage(), 0, (3,),
                                                                                      (1,))[:2], torch.arange(4.0))


def test_a_result_larger_than_the_device_is_refused_before_compiling():
    # A transposed convolution with a huge stride compiled for hours.
    x, w = torch.ones(1, 1, 4, device="tpu"), torch.ones(1, 1, 3, device="tpu")
    with pytest.raises(torch.OutOfMemoryError, match="the result of aten::convolution"):
        F.conv_transpose1d(x, w, stride=2**40)
    assert F.conv_transpose1d(x, w, stride=2).shape == (1, 1, 9)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.bool], ids=str)
def test_dropout_of_integers_is_refused(dtype):
    raises_like_cpu(lambda t: F.dropout(t, 0.5), torch.ones(3, dtype=dtype), match="can't be cast")
    assert_same(lambda t: F.dropout(t, 0.0), torch.ones(3, dtype=dtype))
    assert_same(lambda t: F.dropout(t, 0.5, training=False), torch.ones(3, dtype=dtype))


def test_out_dtypes_that_must_match():
    eye = torch.eye(3)
    f64 = torch.float64
    raises_like_cpu(lambda e: torch.linalg.inv(e, out=torch.empty(3, 3, dtype=f64, device=e.device)), eye,
                    match="dtype")
    raises_like_cpu(lambda e: torch.aminmax(e, out=(torch.empty(0, dtype=f64, device=e.device),
                                                    torch.empty(0, dtype=f64, device=e.device))), eye, match="dtype")
    raises_like_cpu(lambda e: torch.complex(e.double(), e.double(),
                                            out=torch.empty(0, dtype=torch.complex64, device=e.device)), eye)
    assert_same(lambda e: torch.aminmax(e, out=(torch.empty(0, device=e.device), torch.empty(0, device=e.device))),
                eye)


@pytest.mark.parametrize("pool", [lambda x: F.avg_pool2d(x, 1, stride=2**32 + 1),
                                  lambda x: F.max_pool2d(x, 2**32 + 1),
                                  lambda x: F.lp_pool1d(x[0], 2, 2**32 + 1)], ids=["avg", "max", "lp"])
def test_pooling_arguments_beyond_int_are_refused(pool):
    raises_like_cpu(pool, torch.ones(1, 4, 4), match="without overflow")


def test_broadcast_mismatch_speaks_as_pytorch():
    a, b = torch.ones(2, 3), torch.ones(4, 3)
    for fn in (torch.add, torch.mul, torch.maximum, lambda x, y: torch.lerp(x, y, 0.5)):
        raises_like_cpu(fn, a, b, match=r"The size of tensor a \(2\) must match the size of tensor b \(4\) "
                                        r"at non-singleton dimension 0")
    raises_like_cpu(torch.sub, torch.ones(2, 3, 5), torch.ones(2, 4, 6), match="at non-singleton dimension 2")


def test_small_errors_of_their_own_kind():
    raises_like_cpu(lambda t: torch.kthvalue(t, 1), torch.empty(0), match="non-zero size")  # IndexError
    raises_like_cpu(lambda x, t: F.nll_loss(x, t), torch.randn(3), torch.tensor([0, 1]), match="size 1")  # ValueError
    assert_same(lambda x, t: F.nll_loss(x, t), torch.randn(3).log_softmax(0), torch.tensor([1]))
    raises_like_cpu(torch.histc, torch.tensor([1.0, math.inf]), match="not finite")
    raises_like_cpu(torch.histc, torch.tensor([1.0, math.nan]), match="not finite")
    for lo, hi in ((math.nan, math.nan), (0.0, math.nan), (math.nan, 1.0)):
        raises_like_cpu(lambda t: torch.histc(t, 5, min=lo, max=hi), torch.tensor([1.0, 2.0]), match="not finite")
    assert_same(torch.histc, torch.tensor([1.0, 2.0, 2.5]))
    raises_like_cpu(F.binary_cross_entropy, torch.tensor([0.3, 0.6]), torch.tensor([0.0, 2.0]), match="target")
    raises_like_cpu(F.binary_cross_entropy, torch.tensor([0.3, 1.6]), torch.tensor([0.0, 2.0]), match="input")
    assert torch.ones(2, device="tpu").sum().item() == 2  # one error per call: nothing left pending


def test_complex_arguments_refused_with_cpus_words():
    z = torch.ones(2, dtype=torch.complex64)
    raises_like_cpu(torch.minimum, z, z, match="^minimum not implemented for complex")
    raises_like_cpu(lambda x: torch.add(x, x, alpha=1j), torch.ones(2), match="alpha must not be a complex")
    raises_like_cpu(lambda x, i: x.index_fill_(0, i, 1j), torch.ones(3), torch.tensor([0]),
                    match="Converting complex Scalar to non-complex")


@pytest.mark.parametrize("offsets", [[1], [0, 5]], ids=["first not 0", "past the end"])
def test_embedding_bag_offsets_are_checked(offsets):
    raises_like_cpu(lambda w, i, o: F.embedding_bag(i, w, o), torch.randn(10, 3), torch.tensor([1, 2, 3, 4]),
                    torch.tensor(offsets), match="offsets")
    assert_same(lambda w, i, o: F.embedding_bag(i, w, o), torch.randn(10, 3), torch.tensor([1, 2, 3, 4]),
                torch.tensor([0, 2]))


_SPD = torch.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])


@pytest.mark.parametrize(
    "name, fn",
    [
        ("solve", lambda a, o: torch.linalg.solve(a, a[:, :2], out=o)),
        ("det", lambda a, o: torch.linalg.det(a, out=o)),
        ("svdvals", lambda a, o: torch.linalg.svdvals(a, out=o)),
        ("eigvalsh", lambda a, o: torch.linalg.eigvalsh(a, out=o)),
        ("cholesky", lambda a, o: torch.linalg.cholesky(a, out=o)),
        ("lu_solve", lambda a, o: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), a, out=o)),
        ("slogdet", lambda a, o: torch.linalg.slogdet(a, out=(o, o.clone()))),
        ("histc", lambda a, o: torch.histc(a, out=o)),
        ("ihfft", lambda a, o: torch.fft.ihfft(a[0], out=o.to(torch.complex128))),
        ("conj_physical", lambda a, o: torch.conj_physical(a, out=o)),
    ],
)
def test_out_of_a_wider_dtype_is_refused_where_cpu_refuses_it(name, fn):
    # Structured kernels (and TensorIterator's unary ops) need out's dtype exactly.
    raises_like_cpu(lambda a: fn(a, torch.empty(0, dtype=torch.float64, device=a.device)), _SPD)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, o: torch.fft.fft(a[0].to(torch.complex64), out=o.to(torch.complex128)),
        lambda a, o: torch.fft.rfft(a[0], out=o.to(torch.complex128)),
        lambda a, o: torch.fft.irfft(a[0].to(torch.complex64), out=o),
        lambda a, o: torch.cholesky_inverse(a, out=o),
        lambda a, o: torch.linalg.householder_product(a, a[0], out=o),
    ],
)
def test_out_of_a_wider_dtype_is_accepted_where_cpu_accepts_it(fn):
    # These copy their result into out, casting it.
    out = lambda device: torch.empty(0, dtype=torch.float64, device=device)
    expected = fn(_SPD, out("cpu"))
    actual = fn(_SPD.to(TPU), out(TPU))
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual.cpu(), expected)


def test_assert_async_raises_at_the_next_sync():
    # CUDA raises it as a device-side assert; CPU at once. Either way: RuntimeError, same message.
    torch._assert_async(torch.tensor(1, device=TPU))
    torch._assert_async(torch.tensor(True, device=TPU), "fine")
    torch.tpu.synchronize()
    torch._assert_async(torch.tensor(0.0, device=TPU))
    with pytest.raises(RuntimeError, match="Expected Tensor with single nonzero value, but got zero"):
        torch.tpu.synchronize()
    torch._assert_async(torch.tensor(0j, device=TPU), "the step diverged")
    with pytest.raises(RuntimeError, match="the step diverged"):
        torch.ones(1, device=TPU).item()
    for bad in (torch.tensor([1, 1]), torch.tensor([])):
        raises_like_cpu(torch._assert_async, bad, match="Boolean value of Tensor")


@pytest.mark.parametrize("fn", [
    lambda: F.nll_loss(torch.randn(4, 3, device="tpu").log_softmax(1), torch.tensor([0, 1, 2, 0])),
    lambda: torch.arange(3.0).index_select(0, torch.tensor([1], device="tpu")),
], ids=["cpu_target", "index_select"])
def test_tensors_on_cpu_beside_tpu_ones_are_named(fn):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*(tpu and cpu|cpu and tpu)"):
        fn()


def test_a_cpu_tensor_indexed_by_tpu_indices_is_refused_in_cuda_s_words():
    with pytest.raises(IndexError, match="indices should be either on cpu or on the same device as the indexed "
                                         "tensor \\(cpu\\)"):
        torch.arange(3.0)[torch.tensor([2, 0], device="tpu")]


@pytest.mark.parametrize("fn", [
    lambda x, out: torch.sort(x, 0, out=out),
    lambda x, out: torch.topk(x, 2, 0, out=out),
    lambda x, out: torch.max(x, 0, out=out),
    lambda x, out: torch.cummax(x, 0, out=out),
], ids=["sort", "topk", "max", "cummax"])
def test_out_tensors_on_another_device_are_refused(fn):
    x = torch.randn(4, 3, device="tpu")
    with pytest.raises(RuntimeError, match="Expected out tensor to have device tpu:0, but got cpu"):
        fn(x, (torch.empty(0), torch.empty(0, dtype=torch.long)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have device tpu:0, but got cpu"):
        fn(x, (torch.empty(0, device="tpu"), torch.empty(0, dtype=torch.long)))


@pytest.mark.parametrize("fn", [
    lambda x, y: torch.add(x, y, out=x),
    lambda x, y: torch.mul(y, x, out=x),
    lambda x, y: torch.pow(x, y, out=x),
    lambda x, y: torch.where(y > 50, x, y, out=x),
    lambda x, y: torch.clamp(x, min=y, out=x),
    lambda x, y: torch.lerp(x, y, 0.5, out=x),
    lambda x, y: torch.addcdiv(x, y, y + 1, out=x),
    lambda x, y: torch.hypot(x, y, out=x),
    lambda x, y: torch.eq(x, y, out=x),
    lambda x, y: torch.stack([x, x], out=x),
    lambda x, y: torch.cat([x, x], out=x),
], ids=["add", "mul", "pow", "where", "clamp", "lerp", "addcdiv", "hypot", "eq", "stack", "cat"])
def test_an_out_that_is_a_smaller_input_is_not_resized(fn):
    # It was resized first and then read, its new elements as zeros.
    raises_like_cpu(fn, torch.arange(4.0), torch.arange(12.0).view(3, 4) * 10,
                    match="doesn't match the broadcast shape|refer to a single memory location")


@pytest.mark.parametrize("dtype, value", [(torch.int8, 300), (torch.uint8, -256), (torch.uint8, -1.0),
                                          (torch.int32, 2**40), (torch.int64, math.nan), (torch.int16, math.inf),
                                          (torch.float16, 70000), (torch.bfloat16, 1e39)], ids=str)
@pytest.mark.parametrize("op", ["masked_fill", "index_fill"])
def test_a_device_fill_value_that_overflows_raises_as_on_cpu(op, dtype, value):
    # CPU reads the 0-dim value with item() and checks it; tpu checks it on
    # the device and raises at the next sync (it wrapped or saturated).
    def fill(x, v):
        if op == "masked_fill":
            return x.masked_fill(torch.tensor([True, False], device=x.device), v)
        return x.index_fill(0, torch.tensor([0], device=x.device), v)

    v = torch.tensor(value, dtype=torch.float64 if isinstance(value, float) else torch.int64)
    raises_like_cpu(fill, torch.zeros(2, dtype=dtype), v, match="value cannot be converted to type .* without overflow")
    assert_same(fill, torch.zeros(2, dtype=torch.uint8), torch.tensor(-1))  # within c10's unsigned range
    assert_same(fill, torch.zeros(2, dtype=torch.float32), torch.tensor(math.inf, dtype=torch.float64))


@pytest.mark.parametrize("dst, src, value", [(torch.int32, torch.int16, 0), (torch.uint8, torch.int8, 1),
                                             (torch.int8, torch.uint8, 5), (torch.int16, torch.uint16, 7),
                                             (torch.uint8, torch.int8, -3), (torch.int32, torch.float16, 2.5)],
                         ids=str)
@pytest.mark.parametrize("op", ["masked_fill", "index_fill"])
def test_a_device_fill_value_of_another_dtype_that_fits_is_written(op, dst, src, value):
    # The range check compared the value with the destination's limits cast
    # to the value's dtype: int32's max as an int16 is -1, so every value
    # "overflowed".
    def fill(x, v):
        if op == "masked_fill":
            return x.masked_fill(torch.tensor([True, False], device=x.device), v)
        return x.index_fill(0, torch.tensor([0], device=x.device), v)

    assert_same(fill, torch.zeros(2, dtype=dst), torch.tensor(value, dtype=src))


@pytest.mark.parametrize("fn", [
    lambda x: x.__iand__(2.5),
    lambda x: x.__ior__(torch.ones(3, device=x.device)),
    lambda x: x.bitwise_xor_(torch.ones(3, dtype=torch.float64, device=x.device)),
], ids=["and_scalar", "or_tensor", "xor_tensor"])
def test_in_place_bitwise_with_a_float_operand_is_refused_as_on_cpu(fn):
    raises_like_cpu(fn, torch.arange(3), match="result type .* can't be cast to the desired output type Long")


def test_a_reduction_into_its_own_input_reads_the_input_first():
    a = torch.arange(8.0, device="tpu").view(2, 4)
    torch.logsumexp(a, 1, out=a)  # failed to lower: the resized out was read
    torch.testing.assert_close(a.cpu(), torch.arange(8.0).view(2, 4).logsumexp(1))


@pytest.mark.parametrize("dst, src", [((3, 4), (2, 4)), ((3, 4), (2, 3, 4)), ((0, 4), (2, 4))])
def test_copy_of_a_shape_that_does_not_broadcast(dst, src):
    raises_like_cpu(lambda d, s: d.copy_(s), torch.zeros(dst), torch.ones(src),
                    match="must match the size|doesn't match the broadcast shape")
    with pytest.raises(RuntimeError, match="must match the size|doesn't match the broadcast shape"):
        torch.zeros(dst, device="tpu").copy_(torch.ones(src))  # from the host


@pytest.mark.parametrize("make", [
    lambda: torch.ones(2, 2).to_sparse_csr().to("tpu"),
    lambda: torch.sparse_csr_tensor(torch.tensor([0, 1, 2]), torch.tensor([0, 1]), torch.tensor([1.0, 2.0]), (2, 2),
                                    device="tpu").values(),
    lambda: repr(torch.sparse_csr_tensor(torch.tensor([0, 1, 2]), torch.tensor([0, 1]), torch.tensor([1.0, 2.0]),
                                         (2, 2), device="tpu")),
    lambda: torch.ones(4, 4).to_sparse_bsr((2, 2)).to("tpu").to_dense(),
    lambda: torch.ones(2, 3, device="tpu").to_sparse_csr(),
    lambda: torch.ones(4, 4, device="tpu").to_sparse_bsc((2, 2)),
    lambda: torch.ones(2, 3).to_sparse().to("tpu").to_sparse_csr(),
], ids=["csr_moved", "csr_values", "csr_repr", "bsr_to_dense", "to_sparse_csr", "to_sparse_bsc", "coo_to_csr"])
def test_compressed_sparse_layouts_are_refused_by_name(make):
    # CPU builds all of these; tpu supports the COO layout only (tests/test_sparse.py).
    with pytest.raises(NotImplementedError, match="compressed sparse layouts .* are not supported on tpu"):
        make()


@pytest.mark.parametrize("op", [
    lambda w: torch.fbgemm_pack_gemm_matrix_fp16(w),
    lambda w: torch.ops.aten._saturate_weight_to_fp16(w),
    lambda w: torch.fbgemm_linear_quantize_weight(w),
    lambda w: torch.fbgemm_pack_quantized_matrix(w.to(torch.int8)),
    lambda w: torch.fbgemm_linear_fp16_weight(w, torch.fbgemm_pack_gemm_matrix_fp16(w.cpu()), w[0]),
], ids=["pack_fp16", "saturate", "quantize_weight", "pack_quantized", "linear_fp16"])
def test_host_only_fbgemm_kernels_are_refused_not_crashed(op):
    # Their composite kernels read memory on the host: a tpu buffer there
    # killed the process.
    with pytest.raises(NotImplementedError, match="not supported on tpu: its kernel reads tensor memory on the host"):
        op(torch.randn(4, 5, device="tpu"))


def test_pinned_memory_is_refused_for_tpu_tensors():
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        torch.empty(2, device="tpu", pin_memory=True)
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        torch.empty_strided((2,), (1,), device="tpu", pin_memory=True)


OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory location"


@pytest.mark.parametrize("case", [
    "add_", "add_out", "mul_", "neg_out", "clamp_", "where_out", "addcmul_", "lerp_", "copy_", "cumsum_out",
    "index_add_", "index_copy_", "index_add_out", "foreach_add_", "scatter_", "scatter_add_",
    "scatter_reduce_", "scatter_out", "gather_out",
])
def test_an_input_covering_part_of_the_output_is_refused_as_on_cpu(case):
    """CPU and CUDA write element by element and refuse an input that covers
    part of the written tensor; one program would read it all first and
    give a result neither does."""
    def run(x):
        i = torch.tensor([0, 1], device=x.device)
        return {
            "add_": lambda: x[:4].add_(x[2:6]),
            "add_out": lambda: torch.add(x[:4], 1, out=x[2:6]),
            "mul_": lambda: x[:4].mul_(x[3]),
            "neg_out": lambda: torch.neg(x[:4], out=x[2:6]),
            "clamp_": lambda: x[:4].clamp_(min=x[2:6]),
            "where_out": lambda: torch.where(x[:4] > 2, x[:4], x[4:], out=x[2:6]),
            "addcmul_": lambda: x[:4].addcmul_(x[2:6], x[4:]),
            "lerp_": lambda: x[:4].lerp_(x[2:6], 0.5),
            "copy_": lambda: x[1:].copy_(x[:-1]),
            "cumsum_out": lambda: torch.cumsum(x[:4], 0, out=x[2:6]),
            "index_add_": lambda: x[:4].index_add_(0, i, x[2:4]),
            "index_copy_": lambda: x.index_copy_(0, torch.arange(8, device=x.device), x),
            "index_add_out": lambda: torch.index_add(x[:4], 0, i, x[4:6], out=x[3:7]),
            "foreach_add_": lambda: torch._foreach_add_([x[:4], x[6:]], [x[2:6], x[6:]]),
            "scatter_": lambda: x.scatter_(0, i, x[5:7]),
            "scatter_add_": lambda: x.scatter_add_(0, i, x[5:7]),
            "scatter_reduce_": lambda: x.scatter_reduce_(0, i, x[5:7], "amax"),
            "scatter_out": lambda: torch.scatter(x[:4], 0, i, x[5:7], out=x[4:8]),
            "gather_out": lambda: torch.gather(x, 0, i, out=x[5:7]),
        }[case]()
    raises_like_cpu(run, torch.arange(8.0), match=OVERLAP)


def test_inputs_that_overlap_the_output_wholly_or_not_at_all_are_fine():
    def run(x):
        x = x.clone()
        x.add_(x)
        x[:4].mul_(x[4:])
        torch.neg(x[:4], out=x[:4])
        x[1:].copy_(x[1:])
        x.masked_fill_(x > 50, x[3])  # masked_fill_ reads its value first, as on CPU
        torch._foreach_add_([x[:4], x[4:]], [x[:4], x[4:]])
        return x
    assert_same(run, torch.arange(8.0))
