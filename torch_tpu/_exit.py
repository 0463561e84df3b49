"""At interpreter exit, the tpu runtime is left idle before the process's
teardown begins.

Two races end a process badly otherwise:

- A graph task (one backward call) holds Python objects: the exception of
  a backward that raised, objects in the calling thread's state. The device
  thread that ran its last node may free it after the calling thread went
  on, and if that thread has reached the interpreter's finalization by
  then, freeing a Python object takes the GIL, a finalizing interpreter
  ends the thread instead, and the process aborts ("terminate called
  without an active exception", exit status 134). PyTorch's CUDA threads
  share the race. Before finalization, an empty backward through each tpu
  device from a fresh C++ thread
  (`torch_tpu._C.device.release_autograd_graph_tasks`) waits for every
  device thread to free what it holds. It launches no program.
- Programs run asynchronously. A script whose last line launches a large
  one (`b = a @ a`) reaches the C++ static destructors while the plugin's
  threads still execute it, and they crash in code being unloaded (exit
  status 139). `wait_for_launched_work` waits for every launched program
  and transfer first, as a CUDA context waits for its kernels when it is
  destroyed. Fused work still pending is dropped, not compiled: nothing can
  read it any more.
"""

from __future__ import annotations

import atexit


def _leave_runtime_idle() -> None:
    import torch_tpu.tpu as tpu
    from torch_tpu import _C

    if tpu.is_initialized():
        devices = tpu.device_count()
        _C.device.release_autograd_graph_tasks(devices)
        _C.device.wait_for_launched_work(devices)


def install() -> None:
    atexit.register(_leave_runtime_idle)
