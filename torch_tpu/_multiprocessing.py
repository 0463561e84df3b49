"""tpu tensors and torch.multiprocessing.

CUDA tensors cross process boundaries through CUDA IPC and stay shared.
PJRT gives device memory no inter-process handle, so a tpu tensor sent to
another process (a ``Process`` argument, a ``Queue``, a batch from a spawn
``DataLoader`` worker) raised PyTorch's generic "_share_fd_: only available
on CPU". Pickling one for another process now raises an error that says so
and what to send instead. (A ``Queue.put`` still fails in the queue's
feeder thread, where Python prints the error; the receiver keeps waiting,
as for any object that cannot be pickled.)
"""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

from torch.multiprocessing import reductions

MESSAGE = (
    "tpu tensors cannot be shared with another process: device memory has no "
    "inter-process handle (CUDA tensors travel through CUDA IPC). Send "
    "tensor.cpu() and move it to the device in the receiving process."
)


def _refusing_tpu(reduce):
    def reduce_for_another_process(obj):
        if obj.device.type == "tpu":
            raise RuntimeError(MESSAGE)
        return reduce(obj)

    reduce_for_another_process._torch_tpu = True
    return reduce_for_another_process


def install() -> None:
    tensor = _refusing_tpu(reductions.reduce_tensor)
    storage = _refusing_tpu(reductions.reduce_storage)
    for cls, reduce in list(ForkingPickler._extra_reducers.items()):
        if reduce is reductions.reduce_tensor:
            ForkingPickler.register(cls, tensor)
        elif reduce is reductions.reduce_storage:
            ForkingPickler.register(cls, storage)
