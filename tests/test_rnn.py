"""Recurrent layers (nn.LSTM, nn.GRU, nn.RNN and the cells) against CPU:
outputs, final states and every parameter's gradient, across layers,
directions, batch_first, packed sequences, projections, biases and dtypes.
On the device the LSTM / GRU gates run through the fused cell ops
(_thnn_fused_lstm_cell / _thnn_fused_gru_cell) and their backward."""

from __future__ import annotations

import copy

import pytest
import torch

from tpu_testing import to_tpu


def make(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def run_both(module, *inputs, dtype=torch.float32, rtol=1e-5, atol=1e-5):
    """Forward and backward of module on CPU and on tpu (same weights);
    compares outputs, input gradients and parameter gradients."""
    torch.manual_seed(0)
    cpu = module.to(dtype)
    tpu = copy.deepcopy(cpu).to("tpu")

    def flat(out):
        if isinstance(out, torch.nn.utils.rnn.PackedSequence):
            return [out.data]
        if isinstance(out, (tuple, list)):
            return [t for o in out for t in flat(o)]
        return [out]

    def go(m, device):
        args = [a.detach().to(device=device, dtype=dtype).requires_grad_()
                if isinstance(a, torch.Tensor) and a.is_floating_point()
                else (to_tpu(a) if device == "tpu" and not isinstance(a, torch.nn.utils.rnn.PackedSequence)
                      else a) for a in inputs]
        args = [tuple(t.detach().to(device=device, dtype=dtype) for t in a) if isinstance(a, tuple) else a
                for a in args]
        outs = flat(m(*args))
        loss = sum((o * make(o.shape, seed=7, dtype=o.dtype).to(device)).sum() for o in outs)
        loss.backward()
        grads = [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        return outs, grads, [p.grad for p in m.parameters()]

    want = go(cpu, "cpu")
    got = go(tpu, "tpu")
    for w_list, g_list in zip(want, got):
        assert len(w_list) == len(g_list)
        for w, g in zip(w_list, g_list):
            torch.testing.assert_close(g.cpu(), w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("layers,bidirectional,batch_first,bias", [
    (1, False, False, True), (2, True, True, True), (2, False, True, False), (1, True, False, False)])
def test_lstm(layers, bidirectional, batch_first, bias):
    m = torch.nn.LSTM(6, 10, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias)
    x = make((3, 5, 6) if batch_first else (5, 3, 6))
    run_both(m, x)


@pytest.mark.parametrize("layers,bidirectional,bias", [(1, False, True), (2, True, True), (2, False, False)])
def test_gru(layers, bidirectional, bias):
    run_both(torch.nn.GRU(6, 10, num_layers=layers, bidirectional=bidirectional, bias=bias), make((5, 3, 6)))


def test_initial_states_projection_and_unbatched():
    directions = 2
    h0, c0 = make((2 * directions, 3, 4), seed=1), make((2 * directions, 3, 10), seed=2)
    run_both(torch.nn.LSTM(6, 10, num_layers=2, bidirectional=True, proj_size=4), make((5, 3, 6)), (h0, c0))
    run_both(torch.nn.GRU(6, 10), make((5, 6)), make((1, 10), seed=3))  # unbatched, with h0
    run_both(torch.nn.LSTM(6, 10), make((5, 6)))


def test_packed_sequences():
    x = make((4, 6, 5))
    lengths = torch.tensor([6, 4, 4, 1])
    packed_cpu = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
    for m in (torch.nn.LSTM(5, 7, batch_first=True, bidirectional=True), torch.nn.GRU(5, 7, batch_first=True)):
        cpu = m
        tpu = copy.deepcopy(m).to("tpu")
        out_cpu, _ = cpu(packed_cpu)
        packed_tpu = torch.nn.utils.rnn.pack_padded_sequence(to_tpu(x), lengths, batch_first=True)
        out_tpu, _ = tpu(packed_tpu)
        torch.testing.assert_close(out_tpu.data.cpu(), out_cpu.data, rtol=1e-5, atol=1e-5)
        out_cpu.data.sum().backward()
        out_tpu.data.sum().backward()
        for pc, pt in zip(cpu.parameters(), tpu.parameters()):
            torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-5, atol=1e-5)


def test_cells_and_plain_rnn():
    run_both(torch.nn.LSTMCell(6, 8), make((3, 6)), (make((3, 8), seed=1), make((3, 8), seed=2)))
    run_both(torch.nn.GRUCell(6, 8, bias=False), make((3, 6)), make((3, 8), seed=1))
    run_both(torch.nn.RNN(6, 8, num_layers=2, nonlinearity="relu"), make((5, 3, 6)))
    run_both(torch.nn.RNN(6, 8, nonlinearity="tanh", bidirectional=True), make((5, 3, 6)))


def test_float64_and_bfloat16():
    run_both(torch.nn.LSTM(6, 10, num_layers=2), make((5, 3, 6)), dtype=torch.float64, rtol=1e-10, atol=1e-10)
    run_both(torch.nn.GRU(6, 10), make((5, 3, 6)), dtype=torch.float64, rtol=1e-10, atol=1e-10)
    # bfloat16: CPU rounds every intermediate to bfloat16, the fused cell
    # computes in float32 and rounds its outputs once.
    run_both(torch.nn.LSTM(6, 10), make((5, 3, 6)), dtype=torch.bfloat16, rtol=5e-2, atol=5e-2)


def test_lstm_output_state_only_gradient():
    # Only the final cell state is used: the hidden outputs get no gradient
    # (an undefined grad_hy for the fused backward).
    m = torch.nn.LSTM(4, 5)
    tpu = copy.deepcopy(m).to("tpu")
    x = make((3, 2, 4))
    m(x)[1][1].sum().backward()
    tpu(to_tpu(x))[1][1].sum().backward()
    for pc, pt in zip(m.parameters(), tpu.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-5, atol=1e-6)


def test_cell_op_errors():
    gates = to_tpu(torch.ones(2, 8))
    with pytest.raises(RuntimeError, match="_thnn_fused_lstm_cell"):
        torch.ops.aten._thnn_fused_lstm_cell(gates, gates, to_tpu(torch.ones(2, 3)))
    with pytest.raises(RuntimeError, match="_thnn_fused_gru_cell"):
        torch.ops.aten._thnn_fused_gru_cell(gates, gates[:, :6], to_tpu(torch.ones(2, 2)))
