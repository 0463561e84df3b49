"""Debug eager's per-op checks: NaN/Inf in outputs, and agreement with the
same op on the CPU. Installed as a TorchDispatchMode, so they see every aten
op after autograd, and report the op with the Python line that called it."""

from __future__ import annotations

import math
import os
import traceback
import warnings

import torch
from torch.utils._python_dispatch import (
    TorchDispatchMode,
    _get_current_dispatch_mode_stack,
    _pop_mode,
    _push_mode,
)
from torch.utils._pytree import tree_flatten, tree_map

# Ops whose result is not a function of their inputs' values (fresh memory,
# copies between devices, storage surgery): nothing to compare on the CPU.
_NOT_COMPARED = {
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::_to_copy", "aten::copy_", "aten::_copy_from",
    "aten::_copy_from_and_resize", "aten::set_", "aten::resize_", "aten::lift_fresh",
    "aten::detach", "aten::alias", "aten::_local_scalar_dense",
}

# Ops already reported as having no CPU kernel to compare with.
_UNCOMPARED: set[str] = set()

_PACKAGE_DIRS = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep
    for m in (torch, __import__("torch_tpu"))
)


def call_site() -> str:
    """The innermost Python frame outside torch and torch_tpu; in backward
    (the autograd engine's thread, no Python caller), the backward node and,
    when anomaly mode recorded it, its forward's call site."""
    for frame in reversed(traceback.extract_stack()):
        if _outside_packages(frame.filename):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    node = torch._C._current_autograd_node()
    if node is None:
        return "(no caller outside torch)"
    forward = _recorded_call_site(node.metadata.get("traceback_"))
    if forward:
        return f"the backward of {node.name()}, whose forward was called at {forward}"
    return (f"the backward of {node.name()} (run the forward under torch.autograd.detect_anomaly() "
            "to see its call site)")


def _outside_packages(filename: str) -> bool:
    return not os.path.abspath(filename).startswith(_PACKAGE_DIRS)


def _recorded_call_site(recorded) -> str | None:
    """The innermost frame outside torch and torch_tpu in anomaly mode's
    recorded forward stack (traceback.format_stack()'s lines)."""
    if not recorded:
        return None
    site = None
    for line in "".join(recorded).splitlines():
        line = line.strip()
        if line.startswith('File "'):  # File "train.py", line 41, in step
            filename, _, rest = line[len('File "'):].partition('", line ')
            number, _, function = rest.partition(", in ")
            if _outside_packages(filename):
                site = f"{filename}:{number} in {function}"
    return site


def _is_tpu(x) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "tpu" and not x.is_nested


def _dispatches_itself(t: type) -> bool:
    """A tensor subclass with its own `__torch_dispatch__` (DTensor and
    FSDP2's parameters, jagged nested tensors, FakeTensor); Parameter is not."""
    return t.__torch_dispatch__ is not torch.Tensor.__torch_dispatch__


def _backed_by_a_mode(t: type) -> bool:
    """Fake and functional tensors: their subclass handler expects its mode to
    have handled the op; their ops hold no values to check."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor
    return issubclass(t, (FakeTensor, FunctionalTensor))


def _runs_on_cpu(func) -> bool:
    """Whether the op has a CPU kernel to compare with (a custom op may have
    a tpu kernel only)."""
    name = func._schema.name
    if func._overloadname != "default":
        name += "." + func._overloadname
    return torch._C._dispatch_has_computed_kernel_for_dispatch_key(name, "CPU")


def _say_not_compared(func) -> None:
    """Warns, once per op, that compare_cpu cannot check it."""
    name = func._schema.name
    if name not in _UNCOMPARED:
        _UNCOMPARED.add(name)
        warnings.warn(f"tpu debug check: {name} has no CPU kernel, so compare_cpu=True does not check its "
                      "results", stacklevel=3)


# Ops whose further outputs are bookkeeping that CPU fills its own way
# (embedding_bag's offset2bag, bag_size, max_indices): only the first
# this many outputs are compared.
_COMPARED_OUTPUTS = {"aten::_embedding_bag": 1, "aten::_embedding_bag_forward_only": 1}

# Ops whose saved statistics (outputs 1 and 2) are in the accumulation
# type, as PyTorch's shape functions give an accelerator's (CUDA's kernels
# too), where CPU's are in the input's type; in evaluation mode batch norm's
# are the running ones, where CPU's are empty. They are compared in CPU's
# type, and not at all when CPU's are empty.
_STATISTICS_OUTPUTS = {
    "aten::native_layer_norm", "aten::native_batch_norm", "aten::_native_batch_norm_legit",
    "aten::_batch_norm_with_update",
}

# The backward ops taking those statistics: positions of (mean, rstd), of
# the input and of the weight. CPU's kernels want the statistics in the
# weight's type (the input's without one), so the comparison run gets them so.
_STATISTICS_ARGUMENTS = {
    "aten::native_layer_norm_backward": ((3, 4), 1, 5),
    "aten::native_batch_norm_backward": ((5, 6), 1, 2),
    "aten::batch_norm_backward": ((5, 6), 1, 2),
}


def _statistics_as_cpu_takes_them(name: str, cpu_args: tuple) -> tuple:
    stats, input_at, weight_at = _STATISTICS_ARGUMENTS[name]
    if len(cpu_args) <= max(*stats, weight_at):
        return cpu_args
    weight = cpu_args[weight_at]
    dtype = weight.dtype if isinstance(weight, torch.Tensor) else cpu_args[input_at].dtype
    return tuple(a.to(dtype) if i in stats and isinstance(a, torch.Tensor) else a for i, a in enumerate(cpu_args))


# Ops returning (values, indices) of elements chosen along a dim. Among tied
# values either index is right (the tpu sort is stable, CPU's is not), so
# the indices are checked by what they point at, not against CPU's.
_CHOOSES_INDICES = {
    "aten::sort", "aten::topk", "aten::kthvalue", "aten::mode", "aten::median", "aten::nanmedian",
    "aten::max", "aten::min", "aten::cummax", "aten::cummin",
}


def _argument(func, args: tuple, kwargs: dict, name: str, default):
    """An op's argument by schema name (given positionally or by keyword)."""
    for i, a in enumerate(func._schema.arguments):
        if a.name == name:
            if a.name in kwargs:
                return kwargs[a.name]
            if i < len(args):
                return args[i]
            return a.default_value if a.has_default_value() else default
    return default


_FLOAT8 = {torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz}


def _mutated_arguments(func, args: tuple, kwargs: dict) -> list:
    """The arguments the op writes into (`Tensor(a!)` in its schema)."""
    written = []
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            if a.name in kwargs:
                written.append(kwargs[a.name])
            elif i < len(args):
                written.append(args[i])
    return written


def _checkable(t: torch.Tensor) -> torch.Tensor:
    """t, or t widened to f32 when it is an 8-bit float: PyTorch runs
    isnan, isfinite and allclose on those neither on CPU nor on tpu."""
    return t.float() if t.dtype in _FLOAT8 else t


def _intends_infinity(flat_inputs: list) -> bool:
    """Whether an input is an infinite scalar (a -inf fill, SDPA's boolean
    mask turned additive): then infinities in the output are the point."""
    for x in flat_inputs:
        if isinstance(x, float) and math.isinf(x):
            return True
        if (isinstance(x, torch.Tensor) and x.dim() == 0 and x.is_floating_point()
                and math.isinf(float(x.item()))):
            return True
    return False


def _nonfinite_inputs(flat_inputs: list) -> str | None:
    """"nan" when a floating tensor input holds a NaN, "inf" when one holds
    an infinity (and none a NaN), else None: an op that passes along what
    its inputs already hold (a causal mask's -inf through triu, a view, a
    dtype cast, an additive mask) is not where a non-finite value appeared."""
    held = None
    for x in flat_inputs:
        if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()) and x.numel():
            x = _checkable(x)
            if bool(torch.isnan(x).any()):
                return "nan"
            if held is None and not bool(torch.isfinite(x).all()):
                held = "inf"
    return held


def _default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype in _FLOAT8:  # one rounding of a 2- or 3-bit mantissa
        return 0.25, 1e-2
    if dtype in (torch.bfloat16, torch.float16):
        return 2e-2, 1e-2
    return 1e-4, 1e-5


def _rounding_scale(cpu_inputs: list, want: torch.Tensor) -> float:
    """How much rounding error the op may gather: the magnitude of its
    values times the square root of how many input elements meet in each
    output (a 2048-long dot product, a 1e5-element sum or cumsum: two correct
    implementations differ by more than a single rounding there)."""
    tensors = [x for x in cpu_inputs if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())]
    magnitude = 1.0
    for t in tensors + [want]:
        if t.numel():
            m = float(torch.nan_to_num(t.detach().abs().double(), nan=0.0, posinf=0.0, neginf=0.0).max())
            magnitude = max(magnitude, m)
    largest = max((t.numel() for t in tensors), default=1)
    return magnitude * math.sqrt(max(1.0, largest / max(1, want.numel())))


class DebugChecks(TorchDispatchMode):
    def __init__(self, check_finite: bool, compare_cpu: bool, rtol: float | None, atol: float | None):
        super().__init__()
        self.configure(check_finite, compare_cpu, rtol, atol)

    def configure(self, check_finite: bool, compare_cpu: bool, rtol: float | None, atol: float | None) -> None:
        self.check_finite = check_finite
        self.compare_cpu = compare_cpu
        self.rtol = rtol
        self.atol = atol
        self.enabled = True

    def settings(self) -> dict:
        return {"check_finite": self.check_finite, "compare_cpu": self.compare_cpu,
                "rtol": self.rtol, "atol": self.atol}

    @classmethod
    def enable(cls, check_finite: bool, compare_cpu: bool, rtol: float | None, atol: float | None) -> "DebugChecks":
        """Turns the checks on in this thread: the checks already in its
        dispatch mode stack (switched off, perhaps under a mode entered
        since) are switched on again with these settings; else new ones
        are pushed."""
        for mode in _get_current_dispatch_mode_stack():
            if isinstance(mode, cls):
                mode.configure(check_finite, compare_cpu, rtol, atol)
                return mode
        checks = cls(check_finite, compare_cpu, rtol, atol)
        _push_mode(checks)
        return checks

    @classmethod
    def prune(cls) -> None:
        """Pops the switched-off checks (from another thread, or from under
        a mode that has gone since) off the top of this thread's stack."""
        stack = _get_current_dispatch_mode_stack()
        while stack and isinstance(stack[-1], cls) and not stack[-1].enabled:
            _pop_mode()
            stack.pop()

    def uninstall(self) -> None:
        """Stops the checks. PyTorch keeps dispatch modes per thread and pops
        only the innermost one: the checks come off this thread's stack when
        they are its innermost mode, and are switched off in place otherwise
        (under a mode the user entered since, which pops itself, or in
        another thread's stack)."""
        self.enabled = False
        stack = _get_current_dispatch_mode_stack()
        if stack and stack[-1] is self:
            _pop_mode()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.enabled and any(_dispatches_itself(t) for t in types):
            # Checking the subclass itself would call `.cpu()` or `isnan()`
            # on it (a DTensor's `item()` has no sharding rule). Handing the op
            # to the subclass instead keeps this mode active for the ops it
            # runs on the plain tensors inside, which are checked.
            if any(_backed_by_a_mode(t) for t in types):
                return func(*args, **kwargs)
            return NotImplemented
        flat_inputs, _ = tree_flatten((args, kwargs))
        if not self.enabled or not any(_is_tpu(x) for x in flat_inputs):
            return func(*args, **kwargs)
        name = func._schema.name
        compare = (self.compare_cpu and name not in _NOT_COMPARED and not func.is_view
                   and torch.Tag.nondeterministic_seeded not in func.tags)
        if compare and not _runs_on_cpu(func):
            _say_not_compared(func)
            compare = False
        if compare:
            to_cpu = lambda x: x.detach().cpu().clone() if _is_tpu(x) else x  # noqa: E731
            cpu_args, cpu_kwargs = tree_map(to_cpu, (args, kwargs))
            if name in _STATISTICS_ARGUMENTS:
                cpu_args = _statistics_as_cpu_takes_them(name, cpu_args)
            if "device" in cpu_kwargs:
                cpu_kwargs["device"] = torch.device("cpu")
        held = _nonfinite_inputs(flat_inputs) if self.check_finite and not func.is_view else None
        out = func(*args, **kwargs)
        outputs = [t for t in tree_flatten(out)[0] if _is_tpu(t)]
        # An op that writes into its arguments (_foreach_*_, the fused
        # optimizers) returns nothing: what it wrote is its result.
        mutated = _mutated_arguments(func, args, kwargs)
        outputs += [t for t in tree_flatten(mutated)[0] if _is_tpu(t) and not any(t is o for o in outputs)]
        if self.check_finite and not func.is_view and held != "nan":
            nan_only = held == "inf" or _intends_infinity(flat_inputs)
            for t in outputs:
                if not (t.is_floating_point() or t.is_complex()) or not t.numel():
                    continue
                t = _checkable(t)
                if nan_only and bool(torch.isnan(t).any()):
                    raise RuntimeError(f"tpu debug check: {func} produced NaN, called at {call_site()}")
                if not nan_only and not bool(torch.isfinite(t).all()):
                    raise RuntimeError(f"tpu debug check: {func} produced NaN or Inf, called at {call_site()}")
        if compare:
            try:
                cpu_out = func(*cpu_args, **cpu_kwargs)
            except NotImplementedError:
                # A custom op whose CPU path is a stub (torch_tpu::stablehlo_call,
                # or one that only a kernel implements): nothing to compare,
                # which the user is told once per op.
                _say_not_compared(func)
                return out
            except Exception as e:
                # The tpu run succeeded: either it accepted input that CPU
                # refuses, or the op's CPU path cannot run; either way the
                # message says it was the comparison run that failed.
                raise RuntimeError(f"tpu debug check: {func} ran on tpu, but its CPU run for comparison "
                                   f"(compare_cpu=True) raised {type(e).__name__}: {e}; called at {call_site()}") from e
            expected = [t for t in tree_flatten(cpu_out)[0] if isinstance(t, torch.Tensor)]
            returned = {id(t) for t in tree_flatten(out)[0]}
            expected += [t for t, orig in zip(tree_flatten(_mutated_arguments(func, cpu_args, cpu_kwargs))[0],
                                              tree_flatten(mutated)[0])
                         if isinstance(t, torch.Tensor) and _is_tpu(orig) and id(orig) not in returned]
            got = [t.detach().cpu() for t in outputs]
            if name in _GAUGE_OPS:
                _GAUGE_OPS[name](self, func, got, expected, tree_flatten((cpu_args, cpu_kwargs))[0])
                return out
            indices = self._chosen_indices(func, args, kwargs, got, cpu_args)
            compared = _COMPARED_OUTPUTS.get(name, len(got))
            cpu_inputs = tree_flatten((cpu_args, cpu_kwargs))[0]
            for i, (g, want) in enumerate(zip(got[:compared], expected)):
                if name in _STATISTICS_OUTPUTS and i in (1, 2):
                    if not want.numel():
                        continue
                    g = g.to(want.dtype)
                if i != indices:
                    self._compare(func, g, want, cpu_inputs)
        return out

    def _chosen_indices(self, func, args: tuple, kwargs: dict, got: list, cpu_args: tuple) -> int | None:
        """For an op choosing elements along a dim, checks that its indices
        (output 1) point at its values (output 0) and returns 1; None for
        other ops (and a stable sort, whose indices are unique)."""
        if (func._schema.name not in _CHOOSES_INDICES or len(got) != 2 or got[1].dtype != torch.int64
                or _argument(func, args, kwargs, "stable", False)):
            return None
        source = cpu_args[0]
        if not isinstance(source, torch.Tensor) or source.dim() == 0:
            return None
        values, indices = got
        dim = _argument(func, args, kwargs, "dim", -1)
        if values.dim() < source.dim():  # keepdim=False
            values, indices = values.unsqueeze(dim), indices.unsqueeze(dim)
        pointed = source.gather(dim, indices)
        same = (pointed == values) | (pointed.isnan() & values.isnan()) if values.is_floating_point() \
            else pointed == values
        distinct = func._schema.name not in ("aten::sort", "aten::topk") or indices.shape[dim] < 2 or bool(
            (indices.sort(dim).values.diff(dim=dim) != 0).all())
        if not bool(same.all()) or not distinct:
            raise RuntimeError(f"tpu debug check: {func} returned indices that do not point at its values, "
                               f"called at {call_site()}")
        return 1

    def _compare(self, func, got: torch.Tensor, want: torch.Tensor, cpu_inputs: list) -> None:
        rtol, atol = _default_tolerance(want.dtype)
        rtol = self.rtol if self.rtol is not None else rtol
        if self.atol is not None:
            atol = self.atol
        elif want.is_floating_point() or want.is_complex():
            atol *= _rounding_scale(cpu_inputs, want)
        if got.shape != want.shape or got.dtype != want.dtype:
            raise RuntimeError(f"tpu debug check: {func} returned {got.dtype}{list(got.shape)}, the CPU "
                               f"{want.dtype}{list(want.shape)}, called at {call_site()}")
        got, want = _checkable(got), _checkable(want)
        if want.dtype == torch.bool or not (want.is_floating_point() or want.is_complex()):
            ok = torch.equal(got, want)
        else:
            ok = torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if not ok:
            diff = (got.double() - want.double()).abs().max().item() if want.numel() else 0.0
            raise RuntimeError(f"tpu debug check: {func} differs from the CPU (max abs difference {diff:.3g}, "
                               f"rtol {rtol}, atol {atol}), called at {call_site()}")


# Decompositions whose vectors are unique only up to sign or phase (and up
# to rotation among equal values): their values are compared, and the
# vectors through what they reconstruct, which is unique.
def _compare_svd(checks: DebugChecks, func, got: list, want: list, cpu_inputs: list) -> None:
    u, s, vh = got
    checks._compare(func, s, want[1], cpu_inputs)
    if u.numel() and vh.numel():
        k = s.shape[-1]
        rebuild = lambda u, s, vh: (u[..., :k] * s.unsqueeze(-2).to(u.dtype)) @ vh[..., :k, :]  # noqa: E731
        checks._compare(func, rebuild(u, s, vh), rebuild(*want), cpu_inputs)


def _compare_eigh(checks: DebugChecks, func, got: list, want: list, cpu_inputs: list) -> None:
    values, vectors = got
    checks._compare(func, values, want[0], cpu_inputs)
    if vectors.numel():
        rebuild = lambda l, v: (v * l.unsqueeze(-2).to(v.dtype)) @ v.mH  # noqa: E731
        checks._compare(func, rebuild(values, vectors), rebuild(*want), cpu_inputs)


_GAUGE_OPS = {"aten::_linalg_svd": _compare_svd, "aten::_linalg_eigh": _compare_eigh}
