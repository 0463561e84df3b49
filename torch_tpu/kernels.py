"""Custom kernels: your own StableHLO program as a tpu op.

A kernel is a StableHLO module whose ``@main`` computes an op's results from
its tensor inputs. It can be written three ways:

* with the StableHLO builder (``torch_tpu._C.hlo.Builder``), in
  ``register_stablehlo``;
* in JAX, lowered by ``jax.jit`` (Pallas kernels included, which lower to a
  ``tpu_custom_call`` on a TPU), in ``register_jax``;
* as StableHLO text, in ``stablehlo_call``.

The first two give a tpu implementation to a PyTorch custom op (one made with
``torch.library.custom_op`` or ``torch.library.define``), so the op keeps
everything PyTorch builds on it: its CPU implementation, ``register_autograd``
for its backward, ``torch.compile`` (the op stays one node of the graph),
and a fake implementation derived from the kernel when the op has none.

The kernel's module is built once per signature (its inputs' dtypes and
shapes, plus every non-tensor argument, which is baked into the program),
then imported into whatever program runs it: its own program in strict
eager, the pending graph in fused eager, the compiled graph's program under
``torch.compile(backend="tpu")``. Its cache key includes a fingerprint of the
module's text, so an edited kernel never reuses a stale compiled program.
Arguments that change from call to call (a learning rate, a step count)
belong in 0-dim tensors: as Python numbers each new value builds and
compiles a new program.

Kernels are functional: they return new tensors. An op that mutates an input
cannot have one.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from torch_tpu._C import hlo
from torch_tpu._C import kernels as _kernels

__all__ = ["register_stablehlo", "register_jax", "stablehlo_call", "built_kernels", "Kernel"]

Kernel = _kernels.Kernel

# torch dtypes <-> the builder's short names ("f32", "bf16", "pred", ...).
_SHORT_NAMES = {
    torch.bool: "pred", torch.int8: "s8", torch.int16: "s16", torch.int32: "s32", torch.int64: "s64",
    torch.uint8: "u8", torch.uint16: "u16", torch.uint32: "u32", torch.uint64: "u64",
    torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
    torch.complex64: "c64", torch.complex128: "c128",
    torch.float8_e4m3fn: "f8e4m3fn", torch.float8_e5m2: "f8e5m2",
    torch.float8_e4m3fnuz: "f8e4m3fnuz", torch.float8_e5m2fnuz: "f8e5m2fnuz",
}
_TORCH_DTYPES = {name: dtype for dtype, name in _SHORT_NAMES.items()}


def _short_name(dtype: torch.dtype, op: str) -> str:
    try:
        return _SHORT_NAMES[dtype]
    except KeyError:
        raise TypeError(f"{op}: dtype {dtype} is not supported by tpu kernels") from None


def _run(kernel: Kernel, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return kernel(list(inputs))


def _empty_results(kernel: Kernel, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Results of the kernel's types, for fake (meta) tensors."""
    device = inputs[0].device if inputs else torch.device("tpu")
    return [torch.empty(shape, dtype=_TORCH_DTYPES[dtype], device=device)
            for dtype, shape in kernel.result_types]


# ---- stablehlo_call: a module's text, run as it is ----------------------------

_text_kernels: dict[str, Kernel] = {}


def _kernel_from_text(module: str) -> Kernel:
    kernel = _text_kernels.get(module)
    if kernel is None:
        kernel = _text_kernels[module] = _kernels.import_kernel("torch_tpu::stablehlo_call", module)
    return kernel


@torch.library.custom_op("torch_tpu::stablehlo_call", mutates_args=())
def _stablehlo_call(inputs: list[torch.Tensor], module: str) -> list[torch.Tensor]:
    if not inputs:
        raise ValueError("torch_tpu::stablehlo_call: needs at least one tpu tensor input (it runs on the "
                         "inputs' device)")
    raise NotImplementedError(
        "torch_tpu::stablehlo_call runs on tpu tensors only, got tensors on "
        f"{sorted({str(t.device) for t in inputs})}")


@_stablehlo_call.register_kernel("tpu")
def _stablehlo_call_tpu(inputs, module):
    return _run(_kernel_from_text(module), inputs)


@_stablehlo_call.register_fake
def _stablehlo_call_fake(inputs, module):
    return _empty_results(_kernel_from_text(module), inputs)


def stablehlo_call(module: str, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Runs the ``@main`` of StableHLO module text on tpu tensors.

    ``module`` is MLIR text with static shapes, such as
    ``jax.jit(f).lower(...).as_text()`` prints; ``inputs`` must match
    ``@main``'s parameter types exactly. Returns its results as a tuple of
    new tpu tensors. The call is one op (``torch_tpu::stablehlo_call``):
    deferred in fused eager, one node under ``torch.compile``.
    """
    return tuple(torch.ops.torch_tpu.stablehlo_call(list(inputs), module))


# ---- register_stablehlo / register_jax: kernels of custom ops -------------------

def _overload(op) -> torch._ops.OpOverload:
    """The OpOverload of a custom op given as a CustomOpDef, an OpOverload or
    a qualified name ("mylib::op")."""
    if isinstance(op, torch._library.custom_ops.CustomOpDef):
        return op._opoverload
    if isinstance(op, torch._ops.OpOverload):
        return op
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op.default
    if isinstance(op, str):
        namespace, _, name = op.partition("::")
        name, _, overload = name.partition(".")
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, overload or "default")
    raise TypeError(f"expected a custom op (torch.library.custom_op, an OpOverload or 'ns::name'), got {op!r}")


def _has_fake(op, overload: torch._ops.OpOverload) -> bool:
    name = _KernelFamily.qualified_name(overload)
    if not isinstance(op, torch._library.custom_ops.CustomOpDef):
        # An op made with custom_op but passed by name: its CustomOpDef
        # always has a fake wrapper, so ask whether one was registered.
        op = torch._library.custom_ops._maybe_get_opdef(name) or op
    if isinstance(op, torch._library.custom_ops.CustomOpDef):
        return op._abstract_fn is not None
    entry = torch._library.simple_registry.singleton.find(name)
    return entry.fake_impl.kernel is not None or torch._C._dispatch_has_kernel_for_dispatch_key(name, "Meta")


def _describe(value, key: list, tensors: list) -> None:
    """Appends `value`'s part of a kernel signature to `key` and its tensors
    to `tensors` (op arguments are tensors, scalars, or lists of them)."""
    if isinstance(value, torch.Tensor):
        if not all(type(d) is int for d in value.shape):
            raise _SymbolicShape()
        tensors.append(value)
        key.append((value.dtype, value.shape))
    elif isinstance(value, (list, tuple)):
        key.append((type(value), len(value)))
        for v in value:
            _describe(v, key, tensors)
    elif isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise _SymbolicShape()
    elif type(value) is float:
        key.append((float, value.hex()))  # tells -0.0 from 0.0, and nan matches nan
    else:
        key.append((type(value), value))


class _SymbolicShape(Exception):
    pass


def _substitute(value, replacements):
    """`value` with each tensor replaced by the next of `replacements`."""
    if isinstance(value, torch.Tensor):
        return next(replacements)
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, replacements) for v in value)
    return value


def _substitute_call(args: tuple, kwargs: dict, replacements: list):
    """(args, kwargs) with their tensors replaced, in _describe's order."""
    it = iter(replacements)
    args = _substitute(args, it)
    return args, {name: _substitute(v, it) for name, v in kwargs.items()}


class _KernelFamily:
    """One op's kernels: one per signature, made by `make` on first sight."""

    def __init__(self, op, make: Callable[[tuple, dict, list], str], what: str):
        self.overload = _overload(op)
        schema = self.overload._schema
        self.name = self.qualified_name(self.overload)
        if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            raise ValueError(f"{self.name}: {what} kernels are functional, and this op mutates an input "
                             f"({schema}); return the new value instead")
        self.declared = [str(r.type) for r in schema.returns]
        self.returns_list = self.declared == ["List[Tensor]"]
        if not self.returns_list and (not self.declared or self.declared != ["Tensor"] * len(self.declared)):
            raise TypeError(f"{self.name}: kernels can implement ops that return a tensor, a tuple of tensors "
                            f"or a list of tensors; this one returns ({', '.join(self.declared)})")
        self.make = make
        self.kernels: dict[tuple, Kernel] = {}

    @staticmethod
    def qualified_name(overload: torch._ops.OpOverload) -> str:
        name = overload._schema.name
        return name if overload._overloadname == "default" else f"{name}.{overload._overloadname}"

    def kernel(self, args, kwargs) -> tuple[Kernel, list[torch.Tensor]]:
        key: list = [tuple(kwargs)]
        tensors: list[torch.Tensor] = []
        try:
            for value in (args, tuple(kwargs.values())):
                _describe(value, key, tensors)
        except _SymbolicShape:
            raise ValueError(f"{self.name}: custom kernels are built for static shapes and values, and "
                             "torch.compile traced this call with symbolic ones (dynamic=True, mark_dynamic, or "
                             "PyTorch's automatic dynamic shapes after a size changed between calls); give the "
                             "op a fake implementation (@op.register_fake) that returns its results' shapes, "
                             "or compile with dynamic=False") from None
        try:
            kernel = self.kernels.get(tuple(key))
        except TypeError:
            raise TypeError(f"{self.name}: the kernel's non-tensor arguments must be hashable "
                            f"(they are part of its signature), got {args}, {kwargs}") from None
        if kernel is None:
            text = self.make(args, kwargs, tensors)
            kernel = self.kernels[tuple(key)] = _kernels.import_kernel(self.name, text)
            self.check_results(kernel)
        return kernel, tensors

    def check_results(self, kernel: Kernel) -> None:
        n = len(kernel.result_types)
        declared = self.declared
        if self.returns_list:
            return
        if n != len(declared):
            raise TypeError(f"{self.name}: the kernel returns {n} tensors, the op declares {len(declared)}")

    def wrap(self, results: list[torch.Tensor]):
        if self.returns_list:
            return list(results)
        return results[0] if len(results) == 1 else tuple(results)

    def run(self, *args, **kwargs):
        kernel, tensors = self.kernel(args, kwargs)
        return self.wrap(_run(kernel, tensors))

    def fake(self, *args, **kwargs):
        kernel, tensors = self.kernel(args, kwargs)
        return self.wrap(_empty_results(kernel, tensors))

    def register(self, op) -> None:
        torch.library.register_kernel(self.overload, "tpu", self.run)
        if not _has_fake(op, self.overload):
            torch.library.register_fake(self.overload, self.fake)
        _families[self.name] = self


# Per op (its qualified name): the family of its kernels.
_families: dict[str, _KernelFamily] = {}


def built_kernels(op) -> list[Kernel]:
    """The kernels built so far for custom op ``op``, one per signature it
    met, oldest first: ``.text`` is each one's StableHLO, ``.function`` its
    parameter and result types."""
    family = _families.get(_KernelFamily.qualified_name(_overload(op)))
    return list(family.kernels.values()) if family else []


def _results_list(out, name: str, kind) -> list:
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    if not results or not all(isinstance(r, kind) for r in results):
        raise TypeError(f"{name}: the kernel must return one value or a tuple of values, got {out!r}")
    return results


def register_stablehlo(op, build: Callable | None = None):
    """Gives custom op ``op`` a tpu kernel written with the StableHLO builder.

    ``build(b, *args, **kwargs)`` receives an ``hlo.Builder`` and the op's
    arguments with each tensor replaced by an ``hlo.Value`` (a parameter of
    the kernel: ``.dtype`` and ``.shape`` say what it is); other arguments
    come as they were passed. It returns one ``hlo.Value`` or a tuple of
    them: the op's results. Use as a decorator::

        @torch.library.custom_op("mylib::softclip", mutates_args=())
        def softclip(x: torch.Tensor, limit: float) -> torch.Tensor:
            return limit * torch.tanh(x / limit)          # the CPU version

        @torch_tpu.kernels.register_stablehlo(softclip)
        def _(b, x, limit):
            c = b.constant(limit, x.dtype, list(x.shape))
            return b.multiply(c, b.tanh(b.divide(x, c)))

    ``build`` runs once per signature, when the op first meets it.
    """
    def decorate(build_fn: Callable) -> Callable:
        family = None

        def make(args, kwargs, tensors):
            b = hlo.Builder(family.name.replace("::", "_").replace(".", "_"))
            params = [b.parameter(_short_name(t.dtype, family.name), list(t.shape)) for t in tensors]
            build_args, build_kwargs = _substitute_call(args, kwargs, params)
            try:
                results = build_fn(b, *build_args, **build_kwargs)
            except hlo.HloError as e:  # the builder's message names the StableHLO op, not the kernel
                raise hlo.HloError(f"{family.name}: its StableHLO build function failed: {e}") from e
            return b.build(_results_list(results, family.name, hlo.Value))

        family = _KernelFamily(op, make, "StableHLO")
        family.register(op)
        return build_fn

    return decorate(build) if build is not None else decorate


def register_jax(op, fn: Callable | None = None):
    """Gives custom op ``op`` a tpu kernel written in JAX.

    ``fn(*args, **kwargs)`` receives the op's arguments with each tensor
    replaced by a JAX array of its dtype and shape, and returns a JAX array
    or a tuple of them. It is lowered with ``jax.jit`` once per signature,
    for the device's platform, and its StableHLO runs on the tpu device: JAX
    itself runs nothing. 64-bit types are enabled while lowering, so int64
    and float64 tensors keep their types; so do JAX's own defaults
    (``jnp.arange``, ``jnp.zeros`` without a dtype give int64 / float64):
    give dtypes explicitly where the result must match the op's. Pallas kernels work where the device's compiler supports them
    (``tpu_custom_call`` on a TPU; ``interpret=True`` lowers to plain
    StableHLO anywhere). Needs ``jax`` installed.
    """
    def decorate(jax_fn: Callable) -> Callable:
        family = None

        def make(args, kwargs, tensors):
            try:
                import jax
            except ImportError:
                raise ImportError(f"{family.name}: register_jax kernels need jax (pip install jax)") from None
            import numpy as np

            def flat_fn(*arrays):
                jax_args, jax_kwargs = _substitute_call(args, kwargs, arrays)
                return jax_fn(*jax_args, **jax_kwargs)

            # 64-bit types on, so int64 and float64 tensors keep their types;
            # lowered for the device's platform (its compiler's custom calls);
            # unused inputs kept, so @main takes every tensor the op gets.
            enable_x64 = jax.enable_x64 if hasattr(jax, "enable_x64") else jax.experimental.enable_x64
            with enable_x64(True):
                specs = [jax.ShapeDtypeStruct(tuple(t.shape), _jax_dtype(t.dtype, family.name, np))
                         for t in tensors]
                traced = jax.jit(flat_fn, keep_unused=True).trace(*specs)
                return traced.lower(lowering_platforms=(_jax_platform(),)).as_text()

        family = _KernelFamily(op, make, "JAX")
        family.register(op)
        return jax_fn

    return decorate(fn) if fn is not None else decorate


def _jax_platform() -> str:
    """JAX's name of the platform the tpu device runs on."""
    from torch_tpu import runtime

    platform = runtime.platform()
    return {"gpu": "cuda"}.get(platform, platform)


def _jax_dtype(dtype: torch.dtype, op: str, np):
    if dtype == torch.bfloat16:
        import ml_dtypes
        return ml_dtypes.bfloat16
    _short_name(dtype, op)  # raises on types the device lacks
    return np.dtype(str(dtype).removeprefix("torch."))
