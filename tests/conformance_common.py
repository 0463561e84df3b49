"""What the conformance runners share (tests/opinfo_conformance.py,
module_conformance.py, optimizer_conformance.py): moving PyTorch's test
inputs to the device, comparing results with CPU's, running cases and
counting and reporting their outcomes."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field

import torch
import torch_tpu  # noqa: F401  (registers the device)
from torch.utils import _pytree as pytree

DEVICE = "tpu"

# Tolerances by the dtype of the compared result: XLA's CPU compiler
# vectorizes transcendental functions and reorders reductions, so float
# results differ from ATen's in the last bits; integer and bool results are
# exact. (forward, backward)
TOLERANCES = {
    torch.float32: (dict(rtol=1e-4, atol=1e-5), dict(rtol=1e-3, atol=1e-4)),
    torch.float64: (dict(rtol=1e-7, atol=1e-7), dict(rtol=1e-6, atol=1e-6)),
    torch.bfloat16: (dict(rtol=2e-2, atol=2e-2), dict(rtol=5e-2, atol=5e-2)),
    torch.float16: (dict(rtol=2e-3, atol=2e-3), dict(rtol=1e-2, atol=1e-2)),
}
TOLERANCES[torch.complex64] = TOLERANCES[torch.float32]
TOLERANCES[torch.complex128] = TOLERANCES[torch.float64]
EXACT = dict(rtol=0, atol=0)


def tolerance(dtype, backward=False) -> dict:
    return TOLERANCES[dtype][int(backward)] if dtype in TOLERANCES else EXACT


MAX_MESSAGE = 300


@dataclass
class Result:
    name: str
    samples: int = 0
    passed: int = 0
    unsupported: int = 0  # cases refused with NotImplementedError
    errors: list = field(default_factory=list)  # first few failure messages

    @property
    def status(self) -> str:
        if self.samples == 0:
            return "no-samples"
        if self.passed == self.samples:
            return "pass"
        if self.passed > 0:
            return "partial"
        if self.unsupported == self.samples:
            return "unsupported"
        return "fail"


class Skip(Exception):
    """The reference (CPU, or the shape function) refuses the case too:
    there is nothing to compare."""


def run_cases(name: str, cases) -> Result:
    """Runs each (description, function) case: a case passes when its
    function returns, is unsupported when the tpu raises
    NotImplementedError, is not counted when it raises Skip."""
    result = Result(name)
    for desc, case in cases:
        try:
            case()
            result.passed += 1
        except Skip:
            continue
        except NotImplementedError as e:
            result.unsupported += 1
            _note(result, desc, e)
        except Exception as e:  # noqa: BLE001  (any failure is a result)
            _note(result, desc, e)
        finally:
            # A failed deferred check belongs to this case, not the next.
            try:
                torch.tpu.synchronize()
            except Exception:  # noqa: BLE001
                pass
        result.samples += 1
    return result


def _note(result: Result, desc: str, error: Exception) -> None:
    if len(result.errors) < 3:
        result.errors.append(f"{desc + ': ' if desc else ''}{type(error).__name__}: {error}"[:MAX_MESSAGE])


def count_statuses(results) -> dict:
    counts = {s: 0 for s in ("pass", "partial", "unsupported", "fail", "no-samples")}
    for r in results:
        counts[r.status] += 1
    return counts


def summarize(label: str, noun: str, unit: str, results, dtype) -> str:
    """The closing line: e.g. `modules float32: 114 modules: 114 fully
    passing (100.0%), ...; inputs passing 2711/2711`."""
    counts = count_statuses(results)
    items = len(results) - counts["no-samples"]
    cases = sum(r.samples for r in results)
    passed = sum(r.passed for r in results)
    share = 100.0 * counts["pass"] / max(items, 1)
    return (f"{label} {str(dtype).removeprefix('torch.')}: {items} {noun}: {counts['pass']} fully passing "
            f"({share:.1f}%), {counts['partial']} partly, {counts['unsupported']} unsupported, {counts['fail']} "
            f"failing; {unit} passing {passed}/{cases}")


def run_all(items, run_one, summarize, report_path, dtype) -> None:
    """Runs each item (an op, a module, an optimizer), printing its line as
    it ends, then the summary; writes the JSON report."""
    results = []
    start = time.time()
    for item in items:
        r = run_one(item)
        results.append(r)
        print(f"{r.status:12s} {r.passed:3d}/{r.samples:<3d} {r.name}", file=sys.stderr, flush=True)
    summary = summarize(results, dtype)
    write_report(report_path, results, summary, dtype)
    print(f"{summary} ({time.time() - start:.0f} s; report: {report_path})")


def write_report(path, results, summary, dtype=torch.float32) -> None:
    report = {
        "dtype": str(dtype),
        "summary": summary,
        "ops": {r.name: dict(asdict(r), status=r.status) for r in results},
    }
    with open(path, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)


def to_device(value, device):
    if isinstance(value, torch.Tensor):
        requires_grad = value.requires_grad
        if device != "cpu":
            # The whole storage moved, then viewed the same way: as_strided
            # samples address the storage beyond the view. A lazily
            # conjugated or negated view stays one on the device.
            conj, neg = value.is_conj(), value.is_neg()
            value = value.detach()
            value = value.conj() if conj else value
            value = torch._neg_view(value) if neg else value
            flat = torch.empty(0, dtype=value.dtype).set_(value.untyped_storage())
            moved = flat.to(device).as_strided(value.size(), value.stride(), value.storage_offset())
            moved = moved.conj() if conj else moved
            moved = torch._neg_view(moved) if neg else moved
        else:
            moved = value.detach()
        return moved.requires_grad_(requires_grad)
    if isinstance(value, torch.device) or (isinstance(value, str) and value == "cpu"):
        return torch.device(device) if isinstance(value, torch.device) else device
    return value


def compare(actual, expected, what, values=True, backward=False, tol=None):
    """Raises unless `actual` (any tree of tpu tensors and Python values)
    matches CPU's `expected`; `tol` overrides the dtype's tolerance."""
    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if len(a_leaves) != len(e_leaves):
        raise AssertionError(f"{what}: {len(a_leaves)} results, CPU gave {len(e_leaves)}")
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                raise AssertionError(f"{what}: got {type(a).__name__}, CPU gave a tensor")
            a = a.cpu()
            if values:
                try:
                    torch.testing.assert_close(a, e, equal_nan=True, check_stride=False,
                                               **(tol or tolerance(e.dtype, backward)))
                except AssertionError as error:
                    raise AssertionError(f"{what}: {error}") from None
            elif a.shape != e.shape or a.dtype != e.dtype:
                raise AssertionError(f"{what}: {a.dtype}{list(a.shape)} vs CPU {e.dtype}{list(e.shape)}")
        elif isinstance(e, float) and values:
            torch.testing.assert_close(a, e, equal_nan=True, **(tol or tolerance(torch.float32, backward)))
        elif values and not isinstance(e, (torch.dtype, torch.device, torch.Size)) and a != e:
            raise AssertionError(f"{what}: {a!r} vs CPU {e!r}")
