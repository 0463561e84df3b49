"""DTensor and context parallelism for tpu's fused attention.

``F.scaled_dot_product_attention`` on tpu runs the fused kernel
``aten._scaled_dot_product_fused_attention_overrideable`` (and its
backward), where CUDA runs flash / efficient / cuDNN attention. PyTorch's
DTensor registers sharding strategies, and its context parallelism
(``torch.distributed.tensor.experimental.context_parallel``) ring attention,
for the CUDA ops only, so attention over DTensors failed on tpu with "does
not have a sharding strategy registered".

This module gives the tpu op what the CUDA ops have:

- sharding strategies (``register_strategies``): all replicated, sharded
  over heads (tensor parallelism) or over the batch, with a mask
  (``attn_bias``) sharded alongside where it has that dim and replicated
  where it broadcasts (its gradient then a partial sum);
- under context parallelism, the same plus sequence sharding
  (``Shard(2)``), and ring attention: each rank keeps its query block and
  passes key / value blocks around the ring, running the fused kernel on
  each pair and merging the partial results by their log-sum-exp, forward
  and backward. The ring itself is PyTorch's (``_templated_ring_attention``
  and its backward take the attention op as an argument); what is tpu's is
  the op, its arguments and the registration;
- FlexAttention under context parallelism: its per-rank block mask is made
  eagerly (``_create_cp_block_mask``).
"""

from __future__ import annotations

import inspect
import sys

import torch
from torch_tpu import _after_import

aten = torch.ops.aten
FORWARD = aten._scaled_dot_product_fused_attention_overrideable.default
BACKWARD = aten._scaled_dot_product_fused_attention_overrideable_backward.default
# Outputs of the forward op: output, logsumexp, cum_seq_q, cum_seq_k, max_q,
# max_k, philox_seed, philox_offset, debug_attn_mask; of the backward: the
# gradients of query, key, value and attn_bias.
FORWARD_OUTPUTS = 9
BACKWARD_OUTPUTS = 4
SEQ_DIM = 2  # of 4-D [batch, heads, sequence, features] operands


def _bias_placement(bias_shape, dim_from_right: int):
    """Placements of a mask broadcast against scores [B, H, L, S] when the
    computation is sharded along the scores' dim ``-dim_from_right``:
    sharded with it where the mask has that dim, replicated where the mask
    broadcasts over it. Returns (mask placement, its gradient's)."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    dim = len(bias_shape) - dim_from_right
    if dim >= 0 and bias_shape[dim] != 1:
        return Shard(dim), Shard(dim)
    # Every rank reads the whole mask and adds its part of the gradient.
    return Replicate(), Partial()


def _shardings(q_ndim: int, with_sequence: bool):
    """(q / k / v / output dim, logsumexp dim, scores dim from the right)
    of each way the op can be split across one mesh dim. Splitting heads
    keeps grouped-query pairs (query head h, key head h // group) on one
    rank because DTensor admits only even splits of both head counts."""
    ways = [(q_ndim - 3, 1, 3)]  # heads
    if q_ndim == 4:
        ways.append((0, 0, 4))  # batch
        if with_sequence:
            ways.append((SEQ_DIM, 2, 2))
    return ways


def _forward_strategies(op_schema, with_sequence: bool):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor._op_schema import OpStrategy

    args = op_schema.args_schema
    q = args[0]
    bias = args[3] if len(args) > 3 and isinstance(args[3], OpStrategy) else None
    mesh = op_schema.get_mesh_from_args()
    R = Replicate()
    # Per output: output, logsumexp, (no cum_seq_q / cum_seq_k / max_q /
    # max_k), seed, offset (0-dim, the same everywhere), (no debug mask).
    strategies = [[R, R, None, None, None, None, R, R, None] + [R] * (4 if bias else 3)]
    for qkv_dim, lse_dim, scores_dim in _shardings(q.ndim, with_sequence):
        s = Shard(qkv_dim)
        placements = [s, Shard(lse_dim), None, None, None, None, R, R, None, s, s, s]
        if bias is not None:
            placements.append(_bias_placement(bias.shape, scores_dim)[0])
        strategies.append(placements)
    return mesh, strategies


def _backward_strategies(op_schema, with_sequence: bool):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor._op_schema import OpStrategy

    args = op_schema.args_schema
    q = args[1]
    if not with_sequence:
        _refuse_ring_backward_outside_context(args[7])
    bias = args[4] if isinstance(args[4], OpStrategy) else None
    # The tensors after logsumexp (seed and offset, cum_seq_q / cum_seq_k
    # when given) are read whole by every rank.
    rest = sum(isinstance(a, OpStrategy) for a in args[8:])
    mesh = op_schema.get_mesh_from_args(validate=False)
    R = Replicate()
    inputs = 6 + (1 if bias else 0) + rest  # grad_out, q, k, v, (mask,) out, logsumexp, rest
    strategies = [[R, R, R, R if bias else None] + [R] * inputs]
    for qkv_dim, lse_dim, scores_dim in _shardings(q.ndim, with_sequence):
        s = Shard(qkv_dim)
        mask, mask_grad = _bias_placement(bias.shape, scores_dim) if bias else (None, None)
        placements = [s, s, s, mask_grad, s, s, s, s]  # grads; grad_out, q, k, v
        if bias is not None:
            placements.append(mask)
        placements += [s, Shard(lse_dim)] + [R] * rest  # out, logsumexp, rest
        strategies.append(placements)
    return mesh, strategies


def _refuse_ring_backward_outside_context(logsumexp) -> None:
    """A logsumexp sharded on the sequence comes from the ring forward
    under context parallelism. Its backward outside the context_parallel
    block would gather the blocks, which load balancing has rearranged,
    and compute wrong causal gradients without an error (PyTorch's CUDA
    ring does); here it is refused."""
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor._op_schema import OpStrategy

    if not isinstance(logsumexp, OpStrategy):
        return
    placements = logsumexp.strategies[0].output_spec.placements
    if any(isinstance(p, Shard) and p.dim == SEQ_DIM for p in placements):
        raise RuntimeError(
            f"{BACKWARD.name()}: the backward of attention computed under context_parallel must run "
            "inside the same context_parallel block (call loss.backward() within it)")


def _forward_strategy(op_schema, with_sequence=False):
    from torch.distributed.tensor._ops.utils import expand_to_full_mesh_op_strategy

    mesh, strategies = _forward_strategies(op_schema, with_sequence)
    return expand_to_full_mesh_op_strategy(mesh, op_schema, strategies, input_index=FORWARD_OUTPUTS)


def _backward_strategy(op_schema, with_sequence=False):
    from torch.distributed.tensor._ops.utils import expand_to_full_mesh_op_strategy

    mesh, strategies = _backward_strategies(op_schema, with_sequence)
    return expand_to_full_mesh_op_strategy(mesh, op_schema, strategies, input_index=BACKWARD_OUTPUTS)


def _forward_strategy_cp(op_schema):
    return _forward_strategy(op_schema, with_sequence=True)


def _backward_strategy_cp(op_schema):
    return _backward_strategy(op_schema, with_sequence=True)


# The forward's arguments from dropout_p on change the strategy's cache key.
_FORWARD_SCHEMA_ARGS_FROM = 4


def register_strategies(_module=None) -> None:
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo
    from torch.distributed.tensor._ops.utils import register_op_strategy

    register_op_strategy(FORWARD, schema_info=RuntimeSchemaInfo(_FORWARD_SCHEMA_ARGS_FROM))(_forward_strategy)
    register_op_strategy(BACKWARD)(_backward_strategy)


# ----------------------------------------------------------- context parallel


def _ring_forward(mesh, query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False,
                  return_debug_mask=False, *, scale=None):
    from torch.distributed.tensor.experimental._context_parallel import _attention as cp

    _check_ring_inputs(query, attn_bias, dropout_p)
    if return_debug_mask:
        raise NotImplementedError(f"{FORWARD.name()}: context parallelism returns no debug mask")
    return cp._templated_ring_attention(
        mesh.get_group(), SEQ_DIM, FORWARD, query=query, key=key, value=value,
        is_causal=is_causal, dropout_p=dropout_p, scale=scale)


def _ring_backward(mesh, grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp,
                   cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed,
                   philox_offset, *, scale=None):
    from torch.distributed.tensor.experimental._context_parallel import _attention as cp

    _check_ring_inputs(query, attn_bias, dropout_p)
    # The ring adds up every block's gradients of query, key and value.
    return cp._templated_ring_attention_backward(
        mesh.get_group(), SEQ_DIM, BACKWARD, grad_out=grad_out, grad_out_name="grad_out",
        query=query, key=key, value=value, out=out, logsumexp=logsumexp, is_causal=is_causal,
        attn_bias=None, grad_input_mask=[True, True, True, False], cum_seq_q=cum_seq_q,
        cum_seq_k=cum_seq_k, max_q=max_q, max_k=max_k, dropout_p=dropout_p,
        philox_seed=philox_seed, philox_offset=philox_offset, scale=scale)


def _check_ring_inputs(query, attn_bias, dropout_p) -> None:
    if query.dim() != 4:
        raise NotImplementedError(
            f"{FORWARD.name()}: context parallelism takes 4-D query, key and value "
            f"[batch, heads, sequence, features], got a {query.dim()}-D query")
    if attn_bias is not None:
        raise NotImplementedError(
            f"{FORWARD.name()}: context parallelism takes no attn_mask (use is_causal=True)")
    if dropout_p:
        raise NotImplementedError(f"{FORWARD.name()}: context parallelism takes no dropout")


def _ring_handler(op_call, args, kwargs):
    """DTensor's handler for the op while context parallelism is on (as
    PyTorch's ``_sdpa_handler`` for the CUDA ops)."""
    from torch.distributed.tensor import DTensor

    dispatcher = DTensor._op_dispatcher
    op_info = dispatcher.unwrap_to_op_info(op_call, args, kwargs)
    dispatcher.sharding_propagator.propagate(op_info)
    sharding = op_info.output_sharding
    if sharding is None or sharding.needs_redistribute:
        raise RuntimeError(f"{op_call.name()}: context parallelism needs query, key and value "
                           "sharded alike on the sequence dim")
    ring = _ring_forward if op_call is FORWARD else _ring_backward
    local = ring(op_info.compute_mesh, *op_info.local_args, **op_info.local_kwargs)
    return dispatcher.wrap(local, sharding.output_spec)


def _sdpa_input_fn(original, self, module, args, kwargs, *rest, **more):
    """Context parallelism's conversion of SDPA's arguments to sequence
    shards, refusing dropout on tpu: with dropout SDPA takes its math path
    (tpu's fused kernel has none), which cannot run on a sharded sequence
    and failed deep in DTensor, mixing a plain causal mask with shards."""
    query = args[0] if args else kwargs.get("query")
    dropout = kwargs.get("dropout_p", args[4] if len(args) > 4 else 0.0)
    if dropout and isinstance(query, torch.Tensor) and query.device.type == "tpu":
        raise NotImplementedError(
            "scaled_dot_product_attention: context parallelism on tpu takes no dropout (tpu's fused "
            "attention kernel has none, and the math path cannot run on a sharded sequence); use dropout_p=0")
    return original(self, module, args, kwargs, *rest, **more)


def _register_cp_rules(original, *args, **kwargs):
    """PyTorch's CP rule registration, then the tpu op's sequence-sharded
    rules, entered the same way so that its unregistration undoes them."""
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo
    from torch.distributed.tensor.experimental._context_parallel import _sharding_rules as rules

    result = original(*args, **kwargs)
    for op, strategy, info in (
        (FORWARD, _forward_strategy_cp, RuntimeSchemaInfo(_FORWARD_SCHEMA_ARGS_FROM)),
        (BACKWARD, _backward_strategy_cp, None),
    ):
        if op not in rules._cp_strategy_contexts:
            context = rules._op_strategy_context(op, strategy, info)
            rules._original_strategies[op] = context.__enter__()
            rules._cp_strategy_contexts[op] = context
    return result


def _create_cp_block_mask(original, *args, **kwargs):
    """FlexAttention's block mask for a rank's query block, made eagerly on
    tpu: PyTorch compiles ``create_block_mask`` with inductor for it, which
    has no tpu code generation (as ``create_block_mask(_compile=True)``,
    which runs eagerly on tpu)."""
    attention = sys.modules[original.__module__]
    mesh = inspect.signature(original).bind(*args, **kwargs).arguments["device_mesh"]
    if mesh.device_type != "tpu":
        return original(*args, **kwargs)
    from torch.nn.attention.flex_attention import create_block_mask

    compiled = attention._compiled_create_block_mask
    attention._compiled_create_block_mask = create_block_mask
    try:
        return original(*args, **kwargs)
    finally:
        attention._compiled_create_block_mask = compiled


def _install_context_parallel(attention) -> None:
    from torch.distributed.tensor.experimental._context_parallel import _sharding_rules as rules

    attention.custom_ops[FORWARD] = _ring_handler
    attention.custom_ops[BACKWARD] = _ring_handler
    _after_import.wrap(attention._ContextParallel, "sdpa_input_fn", _sdpa_input_fn)
    _after_import.wrap(rules, "register_cp_sharding_rules", _register_cp_rules)
    _after_import.wrap(attention, "_create_cp_block_mask", _create_cp_block_mask, copies=True)


def install() -> None:
    _after_import.when_imported("torch.distributed.tensor", register_strategies)
    _after_import.when_imported(
        "torch.distributed.tensor.experimental._context_parallel._attention", _install_context_parallel)
