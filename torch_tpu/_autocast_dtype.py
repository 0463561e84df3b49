"""bfloat16 as the tpu's autocast dtype.

``torch.autocast("tpu")`` without a dtype takes ``torch.get_autocast_dtype
("tpu")``, which PyTorch initializes to float16 for every accelerator it
does not know (as for CUDA). A TPU's matrix unit multiplies bfloat16, not
float16, and bfloat16 needs no loss scaling, so the tpu's default is
bfloat16 (torch_xla's autocast on a TPU picks it too).

PyTorch keeps the dtype per thread, initialized in each new thread from its
constant, so setting it once at import would reach the importing thread
only (DataParallel's worker threads, a DataLoader's, a user's own would
still see float16). ``install`` wraps ``torch.get_autocast_dtype`` and
``torch.set_autocast_dtype`` instead: until a thread sets the tpu's dtype
itself, reading it gives bfloat16. ``torch.autocast`` reads and sets it
through those two functions.
"""

from __future__ import annotations

import functools
import threading

import torch

_TPU = "tpu"
_DEFAULT = torch.bfloat16
_set_here = threading.local()  # .tpu: this thread set the tpu's dtype itself


def install() -> None:
    original_get, original_set = torch.get_autocast_dtype, torch.set_autocast_dtype
    if getattr(original_get, "_torch_tpu", False):
        return

    @functools.wraps(original_get)
    def get_autocast_dtype(device_type):
        if device_type == _TPU and not getattr(_set_here, "tpu", False):
            return _DEFAULT
        return original_get(device_type)

    @functools.wraps(original_set)
    def set_autocast_dtype(device_type, dtype):
        original_set(device_type, dtype)
        if device_type == _TPU:
            _set_here.tpu = True

    get_autocast_dtype._torch_tpu = True
    torch.get_autocast_dtype, torch.set_autocast_dtype = get_autocast_dtype, set_autocast_dtype
    # The importing thread's own value as well, for code that reads it in C++
    # (an autocast state entered without torch.autocast).
    original_set(_TPU, _DEFAULT)
