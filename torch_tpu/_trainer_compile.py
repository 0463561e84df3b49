"""``Trainer(args=TrainingArguments(torch_compile=True))`` compiles with the
tpu backend.

Two defaults stood in the way, both names of the device kinds each library
knows:

- transformers' ``TrainingArguments`` chooses the Dynamo backend when
  ``torch_compile`` is set without one: ``"hpu_backend"`` on Gaudi,
  ``"neuron"`` on Trainium, else ``"inductor"``, which has no tpu code
  generation (torch_tpu refuses it with a pointer to ``backend="tpu"``).
  With tpu the current accelerator (and ``use_cpu`` not set) the choice
  is now ``"tpu"``; a backend the user names is kept.
- accelerate, which compiles the model for ``Trainer`` and for
  ``Accelerator(dynamo_plugin=...)`` / ``accelerate launch
  --dynamo_backend``, accepts only the members of its ``DynamoBackend``
  enum and refused ``"tpu"`` ("'TPU' is not a valid DynamoBackend").
  ``TPU`` is added to the enum; accelerate passes a member's value, lower
  case, to ``torch.compile(backend=...)``, so it compiles with
  ``backend="tpu"``.
"""

from __future__ import annotations

from torch_tpu import _after_import
from torch_tpu._accelerate import tpu_is_the_accelerator

BACKEND = "tpu"


def _training_arguments_post_init(original, self, *args, **kwargs):
    wants_compile = self.torch_compile or self.torch_compile_mode is not None
    if wants_compile and self.torch_compile_backend is None and not self.use_cpu and tpu_is_the_accelerator():
        self.torch_compile_backend = BACKEND
    return original(self, *args, **kwargs)


def _patch_training_args(training_args) -> None:
    _after_import.wrap(training_args.TrainingArguments, "__post_init__", _training_arguments_post_init)


def _add_enum_member(enum_type, name: str, value: str) -> None:
    """Adds a member to a ``str``-valued Enum after its creation, as its
    metaclass would have made it (lookup by value and by name, iteration,
    attribute access)."""
    if value in enum_type._value2member_map_:
        return
    member = str.__new__(enum_type, value)
    member._name_, member._value_ = name, value
    member.__objclass__ = enum_type
    type.__setattr__(enum_type, name, member)
    enum_type._member_map_[name] = member
    enum_type._value2member_map_[value] = member
    enum_type._member_names_.append(name)


def _patch_dynamo_backends(dataclasses) -> None:
    _add_enum_member(dataclasses.DynamoBackend, BACKEND.upper(), BACKEND.upper())


def install() -> None:
    _after_import.when_imported("transformers.training_args", _patch_training_args)
    _after_import.when_imported("accelerate.utils.dataclasses", _patch_dynamo_backends)
