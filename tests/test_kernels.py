"""Custom kernels (torch_tpu.kernels): StableHLO modules run as tpu ops.

Checked against the same op's CPU implementation in every eager mode and
under torch.compile, with autograd, and across processes through the disk
tier; the importer's text handling and its refusals are checked directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch._dynamo.testing

import torch_tpu
from torch_tpu import kernels, runtime
from torch_tpu._C import hlo

from tpu_testing import to_tpu, tolerances

jax = pytest.importorskip("jax")
jnp = jax.numpy


# ---- ops used throughout ------------------------------------------------------

@torch.library.custom_op("kerneltest::softclip", mutates_args=())
def softclip(x: torch.Tensor, limit: float) -> torch.Tensor:
    return limit * torch.tanh(x / limit)


@kernels.register_stablehlo(softclip)
def _softclip_kernel(b, x, limit):
    c = b.constant(limit, x.dtype, list(x.shape))
    return b.multiply(c, b.tanh(b.divide(x, c)))


@torch.library.custom_op("kerneltest::softclip_grad", mutates_args=())
def softclip_grad(g: torch.Tensor, x: torch.Tensor, limit: float) -> torch.Tensor:
    return g * (1 - torch.tanh(x / limit) ** 2)


@kernels.register_jax(softclip_grad)
def _softclip_grad_kernel(g, x, limit):
    return g * (1 - jnp.tanh(x / limit) ** 2)


def _softclip_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.limit = inputs[1]


def _softclip_backward(ctx, g):
    (x,) = ctx.saved_tensors
    return softclip_grad(g, x, ctx.limit), None


softclip.register_autograd(_softclip_backward, setup_context=_softclip_setup)


@torch.library.custom_op("kerneltest::minmax", mutates_args=())
def minmax(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return x.amin(dim), x.amax(dim)


@kernels.register_jax(minmax)
def _minmax_kernel(x, dim):
    return jnp.min(x, axis=dim), jnp.max(x, axis=dim)


@torch.library.custom_op("kerneltest::scaled_sum", mutates_args=())
def scaled_sum(xs: list[torch.Tensor], scale: torch.Tensor | None = None) -> list[torch.Tensor]:
    return [x * scale if scale is not None else x.clone() for x in xs] + [sum(x.sum() for x in xs)]


@kernels.register_stablehlo(scaled_sum)
def _scaled_sum_kernel(b, xs, scale=None):
    outs = []
    total = None
    for x in xs:
        y = x if scale is None else b.multiply(x, b.broadcast_in_dim(scale, list(x.shape), []))
        outs.append(y)
        (s,) = b.reduce([x], [b.constant(0, x.dtype)], list(range(len(x.shape))),
                        lambda bb, a: [bb.add(a[0], a[1])])
        total = s if total is None else b.add(total, s)
    return outs + [total]


def close(actual, expected):
    torch.testing.assert_close(actual.cpu(), expected, **tolerances(expected.dtype))


# ---- builder kernels ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("shape", [(5, 7), (), (0, 3), (2, 3, 4)])
def test_builder_kernel_matches_cpu(dtype, shape):
    x = torch.randn(shape, dtype=dtype) * 3
    close(softclip(to_tpu(x), 2.0), softclip(x, 2.0))


def test_views_are_materialized_before_the_kernel():
    x = torch.randn(6, 8)
    view = x.t()[1:5, ::2]
    close(softclip(to_tpu(x).t()[1:5, ::2], 1.5), softclip(view, 1.5))


def test_each_static_argument_value_is_its_own_kernel():
    x = torch.randn(4, 4) * 4
    before = {k.symbol for k in kernels.built_kernels(softclip)}
    close(softclip(to_tpu(x), 0.5), softclip(x, 0.5))
    close(softclip(to_tpu(x), 3.25), softclip(x, 3.25))
    close(softclip(to_tpu(x), 0.5), softclip(x, 0.5))
    new = [k for k in kernels.built_kernels(softclip) if k.symbol not in before]
    assert len(new) == 2 and new[0].symbol != new[1].symbol
    assert new[1].function.parameter_types == [("f32", [4, 4])]


def test_kernel_recompile_explanations_are_python_warnings():
    torch_tpu.diagnostics.explain_recompiles(True)
    try:
        x = torch.randn(11, 3, device="tpu")  # a shape no other test compiles
        softclip(x, 1.75)
        with pytest.warns(UserWarning, match="torch_tpu: .*compiled again"):
            softclip(x.t().contiguous(), 1.75)
    finally:
        torch_tpu.diagnostics.explain_recompiles(False)


def test_list_arguments_optional_tensors_and_list_results():
    xs = [torch.randn(3), torch.randn(2, 2)]
    scale = torch.tensor(2.5)
    for s in (scale, None):
        got = scaled_sum(to_tpu(xs), to_tpu(s))
        want = scaled_sum(xs, s)
        assert isinstance(got, list) and len(got) == 3
        for g, w in zip(got, want):
            close(g, w)


def test_integer_and_bool_kernels():
    @torch.library.custom_op("kerneltest::bits", mutates_args=())
    def bits(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return torch.where(m, x ^ 5, x)

    @kernels.register_stablehlo(bits)
    def _(b, x, m):
        return b.select(m, b.xor(x, b.constant(5, x.dtype, list(x.shape))), x)

    x = torch.randint(-100, 100, (9,), dtype=torch.int64)
    m = torch.rand(9) > 0.5
    assert torch.equal(bits(to_tpu(x), to_tpu(m)).cpu(), bits(x, m))


# ---- JAX kernels ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.float64])
def test_jax_kernel_with_two_results(dtype):
    x = (torch.randn(4, 6) * 10).to(dtype)
    for dim in (0, 1):
        got, want = minmax(to_tpu(x), dim), minmax(x, dim)
        assert isinstance(got, tuple) and len(got) == 2
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            close(g, w)


def test_pallas_kernel_in_interpret_mode():
    from jax.experimental import pallas as pl

    @torch.library.custom_op("kerneltest::pallas_axpy", mutates_args=())
    def axpy(a: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return a * x + y

    def axpy_block(a_ref, x_ref, y_ref, o_ref):
        o_ref[...] = a_ref[0] * x_ref[...] + y_ref[...]

    @kernels.register_jax(axpy)
    def _(a, x, y):
        block = (8,)
        return pl.pallas_call(
            axpy_block, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // 8,),
            in_specs=[pl.BlockSpec((1,), lambda i: (0,)), pl.BlockSpec(block, lambda i: (i,)),
                      pl.BlockSpec(block, lambda i: (i,))],
            out_specs=pl.BlockSpec(block, lambda i: (i,)), interpret=True)(a, x, y)

    a, x, y = torch.tensor([1.5]), torch.randn(32), torch.randn(32)
    close(axpy(*to_tpu([a, x, y])), axpy(a, x, y))


def test_jax_kernel_that_ignores_an_input_and_calls_a_nested_jit():
    @torch.library.custom_op("kerneltest::pick", mutates_args=())
    def pick(a: torch.Tensor, b: torch.Tensor, first: bool) -> torch.Tensor:
        return (a if first else b) * 2 + 1

    double = jax.jit(lambda y: y * 2)  # lowers to a private @"<lambda>"

    @kernels.register_jax(pick)
    def _(a, b, first):
        return double(a if first else b) + 1

    a, b = torch.randn(3), torch.randn(3)
    for first in (True, False):
        close(pick(to_tpu(a), to_tpu(b), first), pick(a, b, first))
    assert '@"kernel_' in kernels.built_kernels(pick)[0].text


def test_fake_is_derived_for_an_op_given_by_name():
    @torch.library.custom_op("kerneltest::by_name", mutates_args=())
    def by_name(x: torch.Tensor) -> torch.Tensor:
        return x.sum(0)

    @kernels.register_jax("kerneltest::by_name")
    def _(x):
        return jnp.sum(x, axis=0)

    x = torch.randn(4, 5)
    compiled = torch.compile(lambda t: by_name(t) * 2, backend="tpu", fullgraph=True)
    close(compiled(to_tpu(x)), x.sum(0) * 2)


# ---- autograd, modes, torch.compile ------------------------------------------------

def test_backward_through_register_autograd_with_a_jax_kernel():
    x = torch.randn(5, 7) * 3
    xc = x.clone().requires_grad_()
    xt = to_tpu(x).requires_grad_()
    (softclip(xc, 2.0) ** 2).sum().backward()
    (softclip(xt, 2.0) ** 2).sum().backward()
    close(xt.grad, xc.grad)


def test_fused_eager_defers_the_kernel_into_the_graph():
    x = torch.randn(8, 8)
    xt = to_tpu(x)
    with torch_tpu.eager_mode("fused"):
        torch_tpu.materialize()
        torch_tpu.reset_fused_stats()
        y = softclip(xt * 2, 1.0) + 1
        lo, hi = minmax(y, 1)
        out = (hi - lo).cpu()
        stats = torch_tpu.fused_stats()
    assert stats["graphs_run"] == 1
    assert "func.call" in torch_tpu._C.aten.last_graph_text()
    want = softclip(x * 2, 1.0) + 1
    close(out, want.amax(1) - want.amin(1))


def test_debug_eager_compares_a_kernel_with_the_cpu_op():
    @torch.library.custom_op("kerneltest::wrong_double", mutates_args=())
    def wrong_double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @kernels.register_stablehlo(wrong_double)
    def _(b, x):
        return b.multiply(x, b.constant(2.001, x.dtype, list(x.shape)))

    x = to_tpu(torch.ones(4))
    with torch_tpu.eager_mode("debug", compare_cpu=True):
        close(softclip(x, 2.0), softclip(torch.ones(4), 2.0))
        with pytest.raises(RuntimeError, match="kerneltest.wrong_double.*differs from the CPU"):
            wrong_double(x)


def test_debug_eager_runs_stablehlo_call_without_a_cpu_version():
    x, s = torch.randn(4), torch.tensor(2.0)
    with torch_tpu.eager_mode("debug", compare_cpu=True):
        y, _ = kernels.stablehlo_call(MODULE, to_tpu(x), to_tpu(s))
    close(y, x * 2)


def test_debug_eager_skips_the_comparison_for_a_tpu_only_op():
    lib = torch.library.Library("kerneltest_tpu_only", "DEF")
    lib.define("twice(Tensor x) -> Tensor")

    @kernels.register_stablehlo("kerneltest_tpu_only::twice")
    def _(b, x):
        return b.add(x, x)

    x = to_tpu(torch.arange(3.0))
    with torch_tpu.eager_mode("debug", compare_cpu=True):
        with pytest.warns(UserWarning, match="kerneltest_tpu_only::twice has no CPU kernel, so compare_cpu=True does not check"):
            out = torch.ops.kerneltest_tpu_only.twice(x)
    assert out.cpu().tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(NotImplementedError):
        torch.ops.kerneltest_tpu_only.twice(torch.arange(3.0))


def test_compiled_graph_keeps_the_kernel_as_one_node():
    def step(x, w):
        h = softclip(x @ w, 1.5)
        lo, hi = minmax(h, 0)
        return (hi - lo).sum(), h

    x, w = torch.randn(6, 5), torch.randn(5, 4)
    counter = torch._dynamo.testing.CompileCounterWithBackend("tpu")
    compiled = torch.compile(step, backend=counter, fullgraph=True)
    xt, wt = to_tpu(x), to_tpu(w)
    for _ in range(3):
        got = compiled(xt, wt)
    assert counter.frame_count == 1
    for g, e in zip(got, step(x, w)):
        close(g, e)
    compiles = runtime.cache_stats()["compiles"]
    compiled(xt, wt)
    assert runtime.cache_stats()["compiles"] == compiles


def test_compiled_training_step_with_a_kernel_in_forward_and_backward():
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 6)
    tpu_model = torch.nn.Linear(6, 6).to("tpu")
    tpu_model.load_state_dict(model.state_dict())
    x = torch.randn(10, 6)

    def loss_of(m, inp):
        return softclip(m(inp), 1.0).pow(2).mean()

    compiled = torch.compile(loss_of, backend="tpu")
    for _ in range(2):
        for m in (model, tpu_model):
            m.zero_grad()
        loss_of(model, x).backward()
        loss = compiled(tpu_model, to_tpu(x))
        loss.backward()
        close(loss, loss_of(model, x).detach())
        close(tpu_model.weight.grad, model.weight.grad)


def test_dynamic_shapes_under_compile_are_refused_clearly():
    compiled = torch.compile(lambda a: softclip(a, 1.0), backend="tpu", dynamic=True)
    with pytest.raises(Exception, match="kerneltest::softclip: custom kernels are built for static shapes.*"
                                        "register_fake"):
        compiled(to_tpu(torch.randn(5, 3)))


def test_a_kernel_with_a_fake_implementation_compiles_with_dynamic_shapes():
    @torch.library.custom_op("kerneltest::twice_dynamic", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @kernels.register_stablehlo(twice)
    def _(b, x):
        return b.multiply(x, b.constant(2.0, x.dtype, list(x.shape)))

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)

    compiled = torch.compile(lambda t: twice(t) + 1, backend="tpu")
    for n in (5, 6, 7):  # the second size makes PyTorch trace with a symbolic one
        assert compiled(torch.ones(n, device="tpu")).cpu().tolist() == [3.0] * n


# ---- stablehlo_call and the importer ------------------------------------------------

MODULE = textwrap.dedent("""\
    // a comment with @main and { braces }
    module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.frontend_attributes = {note = "}{"}} {
      func.func public @main(%arg0: tensor<4xf32> {mhlo.layout_mode = "default"}, %arg1: tensor<f32>) -> (tensor<4xf32> {jax.result_info = "@main"}, tensor<i1>) {
        %0 = call @scale(%arg0, %arg1) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
        %1 = stablehlo.compare GT, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
        return %0, %1 : tensor<4xf32>, tensor<i1>
      }
      func.func private @scale(%arg0: tensor<4xf32>, %arg1: tensor<f32>) -> tensor<4xf32> attributes {note = "x"} {
        %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<4xf32>
        %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>
        return %1 : tensor<4xf32>
      }
    }
    """)


def test_importer_skips_comments_inside_functions():
    text = MODULE.replace("%1 = stablehlo.multiply", '// a "quote, a { and @scale\n        %1 = stablehlo.multiply')
    f = hlo.import_module(text, "kc_")
    assert '// a "quote, a { and @scale' in f.text  # comments are left alone
    assert f.result_types == [("f32", [4]), ("pred", [])]


def test_two_modules_under_one_prefix_are_refused():
    other = MODULE.replace("stablehlo.multiply", "stablehlo.add")
    b = hlo.Builder("clash")
    a, c = b.parameter("f32", [4]), b.parameter("f32", [])
    b.call_function(hlo.import_module(MODULE, "same_"), [a, c])
    with pytest.raises(ValueError, match="another module was imported under the same symbol"):
        b.call_function(hlo.import_module(other, "same_"), [a, c])


def test_importer_renames_every_function_and_reads_the_signature():
    f = hlo.import_module(MODULE, "k1_")
    assert f.symbol == "k1_main"
    assert f.parameter_types == [("f32", [4]), ("f32", [])]
    assert f.result_types == [("f32", [4]), ("pred", [])]
    assert "func.func private @k1_main(" in f.text and "func.func private @k1_scale(" in f.text
    assert "call @k1_scale(" in f.text
    assert 'jax.result_info = "@main"' in f.text  # strings are left alone
    assert "public" not in f.text


def test_stablehlo_call_runs_module_text():
    x, s = torch.randn(4), torch.tensor(3.0)
    y, flag = kernels.stablehlo_call(MODULE, to_tpu(x), to_tpu(s))
    close(y, x * 3)
    assert flag.dtype == torch.bool and not flag.item()
    # The same module twice in one program: its functions are added once.
    b = hlo.Builder("twice")
    a = b.parameter("f32", [4])
    c = b.parameter("f32", [])
    f = hlo.import_module(MODULE, "k_")
    (y1, _), (y2, _) = b.call_function(f, [a, c]), b.call_function(f, [a, c])
    text = b.build([b.add(y1, y2)])
    assert text.count("func.func private @k_main(") == 1
    exe = runtime.compile(text)
    client = runtime.client()
    (out,) = exe.execute([client.to_device(x.numpy()), client.to_device(s.numpy())], wait=True)
    torch.testing.assert_close(torch.from_numpy(out.to_numpy()), x * 6)


def test_stablehlo_call_under_compile_and_fused_eager():
    x, s = torch.randn(4), torch.tensor(0.5)
    compiled = torch.compile(lambda a, b: kernels.stablehlo_call(MODULE, a, b)[0] + 1, backend="tpu",
                             fullgraph=True)
    close(compiled(to_tpu(x), to_tpu(s)), x * 0.5 + 1)
    with torch_tpu.eager_mode("fused"):
        y, _ = kernels.stablehlo_call(MODULE, to_tpu(x), to_tpu(s))
        close(y * 2, x)


@pytest.mark.parametrize("text, message", [
    ("module { func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> } }",
     r"no function @main in the module \(found: @f\)"),
    ("module { func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> { return %a : tensor<?xf32> } }",
     "dynamic dimensions are not supported"),
    ("module { func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> }", "has no body"),
    ("module { sdy.mesh @mesh = <[\"x\"=2]> func.func @main() -> () { return } }",
     "only func.func definitions may appear in the module"),
    ("module { func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> } }\n"
     "#loc1 = loc(\"x.py\":1:1)", "unexpected text after the module"),
    ("module { func.func @main(%a: !stablehlo.token) -> !stablehlo.token { return %a : !stablehlo.token } }",
     "only tensor types are supported"),
    ("module { func.func @main(%a: tensor<2xf8E8M0FNU>) -> tensor<2xf8E8M0FNU> { return %a : tensor<2xf8E8M0FNU> } }",
     "unsupported element type 'f8E8M0FNU'"),
    ("module { func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }",
     "unbalanced brackets"),
    ("module { func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> } "
     "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> } }",
     "@main is defined twice"),
])
def test_importer_refuses_what_it_cannot_run(text, message):
    with pytest.raises(ValueError, match=message):
        hlo.import_module(text, "k_")
    with pytest.raises(ValueError, match=message):
        kernels.stablehlo_call(text, to_tpu(torch.ones(2)))


# ---- errors -------------------------------------------------------------------------

def test_inputs_of_another_type_or_device_are_refused():
    with pytest.raises(TypeError, match=r"torch_tpu::stablehlo_call: input 0 must be tensor<4xf32>.*got "
                                        r"tensor<4xf64>"):
        kernels.stablehlo_call(MODULE, to_tpu(torch.ones(4, dtype=torch.float64)), to_tpu(torch.tensor(1.0)))
    with pytest.raises(RuntimeError, match="takes 2 tensors, got 1"):
        kernels.stablehlo_call(MODULE, to_tpu(torch.ones(4)))
    with pytest.raises(NotImplementedError, match="tpu tensors only"):
        kernels.stablehlo_call(MODULE, torch.ones(4), torch.tensor(1.0))


@pytest.mark.skipif(runtime.platform() != "cpu", reason="the CPU plugin's message")
def test_a_custom_call_the_plugin_lacks_fails_with_its_message():
    text = textwrap.dedent("""\
        module { func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.custom_call @tpu_custom_call(%a) {backend_config = "x"} : (tensor<4xf32>) -> tensor<4xf32>
          return %0 : tensor<4xf32> } }""")
    with pytest.raises(RuntimeError, match="torch_tpu::stablehlo_call: compiling .* custom call to tpu_custom_call"):
        kernels.stablehlo_call(text, to_tpu(torch.ones(4)))
    assert (to_tpu(torch.ones(2)) + 1).cpu().tolist() == [2.0, 2.0]  # the device still works


def test_registration_errors_name_the_op():
    @torch.library.custom_op("kerneltest::mutating", mutates_args=("x",))
    def mutating(x: torch.Tensor) -> None:
        x.add_(1)

    with pytest.raises(ValueError, match="kerneltest::mutating: StableHLO kernels are functional"):
        kernels.register_stablehlo(mutating, lambda b, x: x)

    @torch.library.custom_op("kerneltest::one_result", mutates_args=())
    def one_result(x: torch.Tensor) -> torch.Tensor:
        return x

    @kernels.register_stablehlo(one_result)
    def _(b, x):
        return x, x

    with pytest.raises(TypeError, match="kerneltest::one_result: the kernel returns 2 tensors, the op declares 1"):
        one_result(to_tpu(torch.ones(2)))

    @torch.library.custom_op("kerneltest::bad_build", mutates_args=())
    def bad_build(x: torch.Tensor) -> torch.Tensor:
        return x

    @kernels.register_stablehlo(bad_build)
    def _(b, x):
        return b.add(x, b.constant(1.0, "f32", [3]))

    with pytest.raises(ValueError, match="stablehlo.add"):
        bad_build(to_tpu(torch.ones(2)))

    with pytest.raises(TypeError, match="expected a custom op"):
        kernels.register_stablehlo(42, lambda b: None)

    @torch.library.custom_op("kerneltest::returns_int", mutates_args=())
    def returns_int(x: torch.Tensor) -> int:
        return 1

    # refused when registered, not at the first call
    with pytest.raises(TypeError, match="kerneltest::returns_int: kernels can implement ops that return a tensor"):
        kernels.register_stablehlo(returns_int, lambda b, x: x)


# ---- the persistent cache ---------------------------------------------------------

CHILD = r"""
import json, sys
import torch, torch_tpu
from torch_tpu import kernels, runtime

@torch.library.custom_op("kernelchild::affine", mutates_args=())
def affine(x: torch.Tensor) -> torch.Tensor:
    return x * FACTOR + 1

@kernels.register_stablehlo(affine)
def _(b, x):
    return b.add(b.multiply(x, b.constant(FACTOR, x.dtype, list(x.shape))), b.constant(1.0, x.dtype, list(x.shape)))

runtime.reset_cache_stats()
out = affine(torch.arange(4.0, device="tpu")).cpu().tolist()
print(json.dumps({"out": out, "stats": runtime.cache_stats()}))
"""


def run_child(cache_dir, factor: float):
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=str(cache_dir))
    code = CHILD.replace("FACTOR", repr(factor))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                            cwd=cache_dir)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_kernel_and_an_edit_recompiles(tmp_path):
    first = run_child(tmp_path, 2.0)
    assert first["out"] == [1.0, 3.0, 5.0, 7.0] and first["stats"]["compiles"] >= 1
    second = run_child(tmp_path, 2.0)
    assert second["out"] == first["out"] and second["stats"]["compiles"] == 0
    edited = run_child(tmp_path, 3.0)  # the same op name, another kernel
    assert edited["out"] == [1.0, 4.0, 7.0, 10.0] and edited["stats"]["compiles"] >= 1


def test_float8_kernel_from_text():
    text = """module {
      func.func @main(%a: tensor<4xf8E4M3FN>, %b: tensor<4xf32>) -> tensor<4xf32> {
        %0 = stablehlo.convert %a : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
        %1 = stablehlo.multiply %0, %b : tensor<4xf32>
        return %1 : tensor<4xf32>
      }
    }"""
    a = torch.tensor([1.0, -2.5, 448.0, 0.1]).to(torch.float8_e4m3fn)
    b = torch.tensor([2.0, 2.0, 0.5, 10.0])
    got = kernels.stablehlo_call(text, a.to("tpu"), b.to("tpu"))
    torch.testing.assert_close(got[0].cpu(), a.float() * b)


def test_errors_name_the_kernel_and_the_way_to_give_an_op_a_tpu_kernel():
    with pytest.raises(ValueError, match="stablehlo_call: needs at least one tpu tensor"):
        kernels.stablehlo_call(MODULE)

    @torch.library.custom_op("kerneltest_errors::mismatch", mutates_args=())
    def mismatch(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @kernels.register_stablehlo(mismatch)
    def _(b, x):
        return b.add(x, b.constant(1.0, x.dtype, [9]))

    with pytest.raises(hlo.HloError, match=r"kerneltest_errors::mismatch: its StableHLO build function failed: "
                                           r"stablehlo\.add: operand shapes differ"):
        mismatch(torch.ones(3, device="tpu"))

    @torch.library.custom_op("kerneltest_errors::cpu_only", mutates_args=(), device_types="cpu")
    def cpu_only(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    with pytest.raises(NotImplementedError, match=r"kerneltest_errors::cpu_only is not supported on tpu yet \(an "
                                                  r"operator of the 'kerneltest_errors' library .*register_kernel"):
        cpu_only(torch.ones(2, device="tpu"))
