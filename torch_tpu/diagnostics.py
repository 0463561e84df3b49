"""Seeing what the compiler gets and why it compiles again.

- ``set_dump_dir(path)`` (or ``TORCH_TPU_DUMP_DIR``) writes the StableHLO
  of every program built for compilation, strict ops and fused graphs, as
  numbered ``.mlir`` files.
- ``last_graph()`` returns the StableHLO of the last fused graph that ran.
- ``explain_recompiles(True)`` (or ``TORCH_TPU_EXPLAIN_RECOMPILES=1``)
  warns at each compile of an op or fused graph that was compiled before in
  another form, saying which part changed (an operand's shape, a view's
  geometry, an attribute, op N of a graph); ``recompile_explanations()``
  lists them.
- ``replay_status()`` says, for each live ``torch.compile`` graph, whether
  its calls are replayed from a captured program and, if not, why
  (``docs/compile.md``, "Replay").
"""

from __future__ import annotations

from torch_tpu import _C


def set_dump_dir(path: str | None) -> None:
    _C.aten.set_dump_dir(str(path) if path else "")


def dump_dir() -> str | None:
    return _C.aten.dump_dir() or None


def last_graph() -> str:
    """StableHLO text of the last fused graph that ran ('' if none)."""
    return _C.aten.last_graph_text()


def explain_recompiles(on: bool = True) -> None:
    _C.aten.set_explain_recompiles(bool(on))


def recompile_explanations() -> list[str]:
    return list(_C.aten.recompile_explanations())


def clear_recompile_explanations() -> None:
    _C.aten.clear_recompile_explanations()


def replay_status() -> list[dict]:
    """One entry per live compiled graph (fused, replay on): ``graph`` (its
    name), ``plans`` (sets of sizes replayed), ``capturing`` (sets of sizes
    still being captured) and ``failure`` (why the graph is recorded on
    every call, or None)."""
    from torch_tpu._compile.graph_runner import replay_status as status

    return status()
