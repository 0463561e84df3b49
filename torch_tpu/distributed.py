"""torch.distributed on tpu tensors: the c10d backend ``"tpu"``.

``torch.distributed.init_process_group("tpu")`` makes a process group whose
collectives take tpu tensors (and CPU tensors, so one group serves both).
Without a backend argument, ``init_process_group()`` picks ``"tpu"`` too, as
it picks NCCL on CUDA machines. DDP, FSDP2 (``fully_shard``), DeviceMesh and
DTensor / tensor parallelism run on it.

The backend itself is C++ (``csrc/distributed/``). Between processes the data
travels through gloo on the host: see ``docs/distributed.md`` for what that
costs and what a TPU slice would use instead.
"""

from __future__ import annotations

import functools
import inspect

import torch
import torch.distributed as dist

from torch_tpu import _C

try:
    from torch._C._distributed_c10d import _ProcessGroupWrapper
except ImportError:  # a torch without gloo has no wrapper
    _ProcessGroupWrapper = ()

BACKEND_NAME = "tpu"
# Another name for the same backend: Hugging Face Transformers asks for
# "tpu_dist" when it sets up torch.distributed itself on a tpu machine
# (``from_pretrained(..., distributed_config=...)``, ``tp_plan="auto"``).
BACKEND_ALIASES = ("tpu_dist",)


def _create_backend(options, backend_options):
    """Backend creator for ``Backend.register_backend`` (extended API)."""
    host = dist.ProcessGroupGloo(
        options.store, options.group_rank, options.group_size, options.timeout
    )
    return _C.distributed.ProcessGroupTPU(
        host, options.group_rank, options.group_size
    )


def _complete_accelerator_only_group(pg) -> None:
    """Lets a group made without a backend name use its tpu backend.

    ``init_process_group()`` with no backend (which ``init_device_mesh``
    calls) gives a group only the accelerator's backend, and torch marks gloo
    as the group's default unless NCCL is in it. With the tpu backend alone,
    the first use of the default (DDP's construction, ``barrier``) then fails
    with "Could not find backend type 1". The tpu backend serves CPU tensors
    too, so it becomes the group's CPU backend and its default.
    """
    if not isinstance(pg, dist.ProcessGroup):
        return
    cpu = torch.device("cpu")
    if cpu in pg._device_types:
        return
    try:
        backend = pg._get_backend(torch.device("tpu"))
    except RuntimeError:
        return
    # TORCH_DISTRIBUTED_DEBUG=DETAIL wraps the backend in a checker; the
    # checker itself is what the group must use for CPU tensors too.
    inner = backend
    while isinstance(inner, _ProcessGroupWrapper):
        inner = inner.wrapped_pg
    if isinstance(inner, _C.distributed.ProcessGroupTPU):
        custom = dist.ProcessGroup.BackendType.CUSTOM
        pg._register_backend(cpu, custom, backend)
        pg._set_default_backend(custom)


def _unbind_device_from_host_only_group(arguments: dict) -> None:
    """A group of a backend that takes no tpu tensors (``new_group(...,
    backend="gloo")``, which torchtitan makes for checkpoints) inherits the
    default group's bound tpu device, and torch then asks it for its tpu
    backend, which it lacks: with CUDA, gloo lists cuda among its devices.
    Such a group is left unbound, as it would be without ``device_id``."""
    device = arguments.get("device_id")
    backend = str(arguments.get("backend", ""))
    if device is None or torch.device(device).type != BACKEND_NAME or ":" in backend or "," in backend:
        return
    if BACKEND_NAME not in dist.Backend.backend_capability.get(backend.lower(), [BACKEND_NAME]):
        arguments["device_id"] = None


def _wrap_group_creation() -> None:
    from torch.distributed import distributed_c10d

    create = distributed_c10d._new_process_group_helper

    signature = inspect.signature(create)

    @functools.wraps(create)
    def create_and_complete(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        _unbind_device_from_host_only_group(call.arguments)
        pg, store = create(*call.args, **call.kwargs)
        _complete_accelerator_only_group(pg)
        return pg, store

    distributed_c10d._new_process_group_helper = create_and_complete


def install() -> None:
    """Registers the backend with torch.distributed (at import of torch_tpu)."""
    if not dist.is_available() or BACKEND_NAME in dist.Backend.backend_list:
        return
    # The main name first: the first name registered for a device is its
    # default backend.
    for name in (BACKEND_NAME, *BACKEND_ALIASES):
        dist.Backend.register_backend(
            name, _create_backend, extended_api=True, devices=["cpu", "tpu"]
        )
    _wrap_group_creation()
