"""At interpreter exit, the autograd engine's tpu threads let go of their
last graph task before Python's finalization begins.

A graph task (one backward call) holds Python objects: the exception of a
backward that raised, objects in the calling thread's state. The device
thread that ran its last node may free it after the calling thread went
on, and if that thread has reached the interpreter's finalization by then,
freeing a Python object takes the GIL, a finalizing interpreter ends the
thread instead, and the process aborts ("terminate called without an
active exception", exit status 134). PyTorch's CUDA threads share the race.
Before finalization, an empty backward through each tpu device from a
fresh C++ thread (`torch_tpu._C.device.release_autograd_graph_tasks`) waits
for every device thread to free what it holds. It launches no program.
"""

from __future__ import annotations

import atexit


def _release_autograd_graph_tasks() -> None:
    import torch_tpu.tpu as tpu
    from torch_tpu import _C

    if tpu.is_initialized():
        _C.device.release_autograd_graph_tasks(tpu.device_count())


def install() -> None:
    atexit.register(_release_autograd_graph_tasks)
