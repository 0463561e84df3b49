"""Hugging Face Transformers and Diffusers models on the device, built from
small configs in code (random weights; nothing is downloaded): outputs,
losses and gradients against the same model on CPU, greedy generation,
from_pretrained(device_map="tpu"), and Diffusers' UNet, VAE and a
scheduler step. Families cover decoder-only LMs (with grouped-query
attention, sliding windows, mixture of experts), encoders, seq2seq text
and audio, speech CTC (weight-normed convolutions) and vision."""

from __future__ import annotations

import copy
import logging
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

transformers = pytest.importorskip("transformers")
diffusers = pytest.importorskip("diffusers")

from tpu_testing import to_tpu  # noqa: E402

TOL = dict(rtol=1e-4, atol=1e-4)
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


def ids(shape=(2, 12), vocab=100, seed=0):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def on_tpu(inputs):
    return {k: to_tpu(v) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def output_of(out):
    for key in ("logits", "logits_per_image", "sample", "last_hidden_state"):
        if key in out:
            return out[key]
    return out[0]


def assert_model_matches_cpu(model, inputs, train=True):
    """The model's output, loss and every parameter's gradient agree between
    CPU and a copy on the device."""
    torch.manual_seed(0)
    cpu = model.eval()
    tpu = copy.deepcopy(model).to("tpu")
    with torch.no_grad():
        want = cpu(**inputs)
        got = tpu(**on_tpu(inputs))
    torch.testing.assert_close(output_of(got).cpu(), output_of(want), **TOL)
    if not train:
        return
    # Dropout off (eval) so both sides compute the same function.
    want = cpu(**inputs)
    got = tpu(**on_tpu(inputs))
    want_loss = want.loss if getattr(want, "loss", None) is not None else output_of(want).pow(2).mean()
    got_loss = got.loss if getattr(got, "loss", None) is not None else output_of(got).pow(2).mean()
    torch.testing.assert_close(got_loss.cpu(), want_loss, **TOL)
    want_loss.backward()
    got_loss.backward()
    for (name, pc), pt in zip(cpu.named_parameters(), tpu.parameters()):
        if pc.grad is None:
            assert pt.grad is None, name
            continue
        torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-3, atol=1e-4, msg=name)


T = transformers

CAUSAL_LMS = {
    "llama": lambda: T.LlamaForCausalLM(T.LlamaConfig(vocab_size=100, **SMALL, num_key_value_heads=2)),
    "gpt2": lambda: T.GPT2LMHeadModel(T.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    "qwen2": lambda: T.Qwen2ForCausalLM(T.Qwen2Config(vocab_size=100, **SMALL, num_key_value_heads=2)),
    "mistral": lambda: T.MistralForCausalLM(T.MistralConfig(vocab_size=100, **SMALL, num_key_value_heads=2,
                                                            sliding_window=8)),
    "mixtral": lambda: T.MixtralForCausalLM(T.MixtralConfig(vocab_size=100, **SMALL, num_key_value_heads=2,
                                                            num_local_experts=4, num_experts_per_tok=2)),
}


@pytest.mark.parametrize("family", sorted(CAUSAL_LMS))
def test_causal_lm_forward_loss_and_gradients(family):
    torch.manual_seed(0)
    x = ids()
    assert_model_matches_cpu(CAUSAL_LMS[family](), dict(input_ids=x, labels=x))


def test_llama_generate_and_from_pretrained_device_map(tmp_path):
    torch.manual_seed(0)
    model = CAUSAL_LMS["llama"]().eval()
    x = ids((2, 6))
    mask = torch.ones_like(x)
    want = model.generate(x, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
    model.save_pretrained(tmp_path)
    loaded = T.AutoModelForCausalLM.from_pretrained(tmp_path, device_map="tpu")
    assert all(p.device.type == "tpu" for p in loaded.parameters())
    got = loaded.generate(to_tpu(x), attention_mask=to_tpu(mask), max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert torch.equal(got.cpu(), want)


def test_sharded_checkpoint_split_over_devices_and_cpu(tmp_path):
    """A checkpoint saved in shards loads with a device_map that splits the
    layers over two tpu devices, or over a tpu and the CPU (accelerate's
    offload hooks move activations between them), and computes what the CPU
    model computes."""
    torch.manual_seed(0)
    model = CAUSAL_LMS["llama"]().eval()
    model.save_pretrained(tmp_path, max_shard_size="50KB")
    assert len(list(tmp_path.glob("*.safetensors"))) > 1
    x = ids((1, 8))
    with torch.no_grad():
        want = model(x).logits
    tail = ("model.layers.1", "model.norm", "model.rotary_emb", "lm_head")
    for second in ("tpu:1", "cpu"):
        device_map = {"model.embed_tokens": "tpu:0", "model.layers.0": "tpu:0", **{m: second for m in tail}}
        loaded = T.AutoModelForCausalLM.from_pretrained(tmp_path, device_map=device_map)
        layers = loaded.model.layers
        assert layers[0].self_attn.q_proj.weight.device == torch.device("tpu:0")
        if second == "tpu:1":
            assert layers[1].self_attn.q_proj.weight.device == torch.device("tpu:1")
        with torch.no_grad():
            got = loaded(to_tpu(x)).logits
        torch.testing.assert_close(got.cpu(), want, **TOL)


def saved_llama(path):
    """A small Llama saved to `path`, an input and the CPU's logits for it."""
    torch.manual_seed(0)
    model = CAUSAL_LMS["llama"]().eval()
    model.save_pretrained(path)
    x = ids((1, 8))
    with torch.no_grad():
        return model, x, model(x).logits


def test_auto_device_map_with_a_tpu_memory_budget(tmp_path):
    """device_map="auto" with max_memory for device 0 (an integer key is the
    current accelerator, tpu) fills tpu:0 first and offloads the rest to the
    CPU, as on CUDA."""
    model, x, want = saved_llama(tmp_path)
    model_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    budget = {0: model_bytes // 2, "cpu": 10 * model_bytes}
    loaded = T.AutoModelForCausalLM.from_pretrained(tmp_path, device_map="auto", max_memory=budget)
    placed = set(loaded.hf_device_map.values())
    assert placed == {0, "cpu"}, loaded.hf_device_map
    assert loaded.model.embed_tokens.weight.device == torch.device("tpu:0")
    with torch.no_grad():
        got = loaded(to_tpu(x)).logits
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), want, **TOL)


@pytest.mark.parametrize("device_map", ["auto", "sequential"])
def test_auto_device_map_fills_the_tpu_devices(tmp_path, device_map):
    """Without a budget, accelerate's memory query finds the tpu devices
    (it names only CUDA, XPU, NPU, ...): "auto" spreads the layers over them
    as over several GPUs, "sequential" fills tpu:0 first, nothing goes to
    the CPU, and accelerate no longer warns that device 0 is unavailable."""
    _, x, want = saved_llama(tmp_path)
    warned = []
    handler = logging.Handler()
    handler.emit = lambda record: warned.append(record.getMessage())
    accelerate_log = logging.getLogger("accelerate.utils.modeling")
    accelerate_log.addHandler(handler)
    try:
        loaded = T.AutoModelForCausalLM.from_pretrained(tmp_path, device_map=device_map)
    finally:
        accelerate_log.removeHandler(handler)
    assert not any("is not available" in message for message in warned), warned
    devices = {p.device for p in loaded.parameters()}
    assert all(d.type == "tpu" for d in devices), devices
    if device_map == "sequential":
        assert devices == {torch.device("tpu:0")}
    else:
        assert len(devices) > 1 and set(loaded.hf_device_map.values()) <= set(range(torch.tpu.device_count()))
    with torch.no_grad():
        got = loaded(to_tpu(x)).logits
    torch.testing.assert_close(got.cpu(), want, **TOL)


def test_accelerate_memory_query(tmp_path):
    from accelerate.utils import get_max_memory
    import transformers.integrations.accelerate as hf_accelerate

    found = get_max_memory()
    assert list(found) == [*range(torch.tpu.device_count()), "cpu"]
    assert all(found[i] == torch.tpu.mem_get_info(i)[0] or found[i] > 0 for i in range(torch.tpu.device_count()))
    assert get_max_memory({0: "1GiB", "cpu": 1000}) == {0: 1 << 30, "cpu": 1000}  # a budget stays the caller's
    assert hf_accelerate.accelerate_max_memory is get_max_memory
    # torch_tpu imported after accelerate and transformers took their copies.
    code = ("import transformers.integrations.accelerate as a, accelerate.utils as u, torch_tpu, torch; "
            "print(list(a.accelerate_max_memory()) == list(u.get_max_memory()) == [*range(torch.tpu.device_count()), 'cpu'])")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180,
                            cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_encoders_and_seq2seq():
    torch.manual_seed(0)
    x = ids()
    bert = T.BertForSequenceClassification(T.BertConfig(vocab_size=100, **SMALL, num_labels=3))
    assert_model_matches_cpu(bert, dict(input_ids=x, attention_mask=torch.ones_like(x), labels=torch.tensor([0, 2])))
    t5 = T.T5ForConditionalGeneration(T.T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                                 num_heads=4, decoder_start_token_id=0, pad_token_id=0))
    assert_model_matches_cpu(t5, dict(input_ids=x, labels=x))


def test_audio_models():
    torch.manual_seed(0)
    whisper = T.WhisperForConditionalGeneration(T.WhisperConfig(
        vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=32,
        max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1))
    features = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1))
    assert_model_matches_cpu(whisper, dict(input_features=features, labels=ids((2, 8))))
    # Wav2Vec2's positional convolution is weight-normed; CTC loss on top.
    wav2vec2 = T.Wav2Vec2ForCTC(T.Wav2Vec2Config(
        vocab_size=20, **SMALL, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4))
    audio = torch.randn(2, 400, generator=torch.Generator().manual_seed(2))
    assert_model_matches_cpu(wav2vec2, dict(input_values=audio, labels=ids((2, 5), vocab=19) + 1))


def test_vision_transformer():
    torch.manual_seed(0)
    vit = T.ViTForImageClassification(T.ViTConfig(image_size=32, patch_size=8, **SMALL, num_labels=5))
    images = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    assert_model_matches_cpu(vit, dict(pixel_values=images, labels=torch.tensor([1, 4])))


def test_diffusers_unet_vae_and_scheduler():
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=16)
    g = torch.Generator().manual_seed(4)
    assert_model_matches_cpu(unet, dict(sample=torch.randn(2, 4, 16, 16, generator=g), timestep=torch.tensor([10, 500]),
                                        encoder_hidden_states=torch.randn(2, 7, 32, generator=g)))
    vae = diffusers.AutoencoderKL(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), block_out_channels=(16, 32), latent_channels=4,
        norm_num_groups=8, sample_size=32)
    assert_model_matches_cpu(vae, dict(sample=torch.randn(1, 3, 32, 32, generator=g), sample_posterior=False))
    cpu_scheduler, tpu_scheduler = diffusers.DDIMScheduler(num_train_timesteps=100), diffusers.DDIMScheduler(
        num_train_timesteps=100)
    cpu_scheduler.set_timesteps(10)
    tpu_scheduler.set_timesteps(10, device="tpu")
    latents, noise = torch.randn(1, 4, 8, 8, generator=g), torch.randn(1, 4, 8, 8, generator=g)
    want = cpu_scheduler.step(noise, cpu_scheduler.timesteps[0], latents).prev_sample
    got = tpu_scheduler.step(to_tpu(noise), tpu_scheduler.timesteps[0], to_tpu(latents)).prev_sample
    torch.testing.assert_close(got.cpu(), want, **TOL)


class LanguageBatches(torch.utils.data.Dataset):
    """`n` sequences of 12 tokens, each its own labels (a causal LM's loss)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = ids((12,), seed=i)
        return dict(input_ids=x, labels=x)


def test_trainer_trains_on_the_device(tmp_path, monkeypatch):
    # accelerate 1.15 names no PrivateUse1 device: its default device was
    # the CPU, where Trainer moved the model while it sent batches to the
    # tpu. torch_tpu makes the tpu accelerate's default (docs/huggingface.md).
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, PartialState

    monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)
    AcceleratorState._reset_state(reset_partial_state=True)
    assert Accelerator(cpu=True).device == torch.device("cpu")  # still the caller's choice
    AcceleratorState._reset_state(reset_partial_state=True)
    torch.manual_seed(0)
    model = CAUSAL_LMS["llama"]()

    args = T.TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4, max_steps=2, report_to=[],
                               save_strategy="no", logging_steps=1)
    before = model.lm_head.weight.detach().clone()
    result = T.Trainer(model=model, args=args, train_dataset=LanguageBatches(8)).train()
    assert torch.isfinite(torch.tensor(result.training_loss))
    assert model.lm_head.weight.device.type == "tpu"
    assert not torch.equal(model.lm_head.weight.detach().cpu(), before)
    AcceleratorState._reset_state(reset_partial_state=True)
    assert PartialState._shared_state == {}


def test_trainer_torch_compile_uses_the_tpu_backend(tmp_path):
    # TrainingArguments chose "inductor" and accelerate knew no "tpu" Dynamo
    # backend; both now lead to torch.compile(backend="tpu")
    # (torch_tpu/_trainer_compile.py). Same losses as the eager Trainer.
    import torch._dynamo
    from accelerate.state import AcceleratorState
    from accelerate.utils import DynamoBackend, TorchDynamoPlugin

    def train(**compile_args):
        AcceleratorState._reset_state(reset_partial_state=True)
        torch.manual_seed(0)
        model = CAUSAL_LMS["llama"]()
        args = T.TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4, max_steps=2,
                                   report_to=[], save_strategy="no", logging_steps=1, **compile_args)
        trainer = T.Trainer(model=model, args=args, train_dataset=LanguageBatches(8))
        trainer.train()
        return args, [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]

    _, eager_losses = train()
    torch._dynamo.reset()
    graphs_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    args, compiled_losses = train(torch_compile=True)
    assert args.torch_compile_backend == "tpu"
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > graphs_before
    assert compiled_losses == pytest.approx(eager_losses, rel=1e-4)
    assert TorchDynamoPlugin(backend="tpu").backend is DynamoBackend.TPU
    assert "TPU" in DynamoBackend.list()
    AcceleratorState._reset_state(reset_partial_state=True)


def test_resumed_training_draws_the_same_dropout(tmp_path):
    """Trainer's checkpoints keep the tpu generators' states (it saves only
    the device kinds it names): resuming from step 2 of 4 ends with the
    uninterrupted run's weights, dropout included; so does accelerate's
    save_state / load_state."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    def model():
        torch.manual_seed(0)
        return T.GPT2LMHeadModel(T.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                              resid_pdrop=0.3, embd_pdrop=0.3, attn_pdrop=0.3))

    args = T.TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4, max_steps=4, report_to=[],
                               save_steps=2, seed=0)
    uninterrupted, resumed = model(), model()
    T.Trainer(model=uninterrupted, args=args, train_dataset=LanguageBatches(32)).train()
    T.Trainer(model=resumed, args=args, train_dataset=LanguageBatches(32)).train(resume_from_checkpoint=tmp_path / "checkpoint-2")
    assert resumed.lm_head.weight.device.type == "tpu"
    torch.testing.assert_close(resumed.lm_head.weight.cpu(), uninterrupted.lm_head.weight.cpu(), rtol=0, atol=0)

    AcceleratorState._reset_state(reset_partial_state=True)
    accelerator = Accelerator()
    dropout = accelerator.prepare(torch.nn.Dropout(0.5))
    accelerator.save_state(tmp_path / "state")
    x = torch.ones(64, device=accelerator.device)
    first = dropout(x).cpu()
    accelerator.load_state(tmp_path / "state")
    assert torch.equal(dropout(x).cpu(), first)
    AcceleratorState._reset_state(reset_partial_state=True)


def test_llama_in_fused_eager_and_compiled():
    # The same model through fused eager (generation included) and
    # torch.compile(backend="tpu") (a training step), against CPU.
    import torch_tpu

    torch.manual_seed(0)
    model = CAUSAL_LMS["llama"]().eval()
    x = ids()
    want = model(x).logits
    want_tokens = model.generate(x[:, :5], max_new_tokens=5, do_sample=False, pad_token_id=0)
    tpu = copy.deepcopy(model).to("tpu")
    with torch_tpu.eager_mode("fused"):
        torch.testing.assert_close(tpu(to_tpu(x)).logits.cpu(), want, **TOL)
        tokens = tpu.generate(to_tpu(x[:, :5]), max_new_tokens=5, do_sample=False, pad_token_id=0)
        assert torch.equal(tokens.cpu(), want_tokens)
    compiled = torch.compile(tpu, backend="tpu")
    torch.testing.assert_close(compiled(to_tpu(x), labels=to_tpu(x)).loss.cpu(), model(x, labels=x).loss, **TOL)


def test_llama_with_flex_attention():
    # transformers refused FlexAttention when the accelerator is tpu and
    # compiled it with inductor (torch_tpu/_transformers_flex.py). Against
    # the same weights with SDPA on CPU, where FlexAttention has no backward.
    torch.manual_seed(0)
    cpu = CAUSAL_LMS["llama"]()
    tpu = CAUSAL_LMS["llama"]()
    tpu.load_state_dict(cpu.state_dict())
    tpu.set_attn_implementation("flex_attention")
    tpu.to("tpu")
    x = ids()
    for train in (False, True):
        cpu.train(train)
        tpu.train(train)
        want, got = cpu(x, labels=x), tpu(to_tpu(x), labels=to_tpu(x))
        torch.testing.assert_close(got.logits.cpu(), want.logits, **TOL)
    want.loss.backward()
    got.loss.backward()
    for (name, pc), pt in zip(cpu.named_parameters(), tpu.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-3, atol=1e-4, msg=name)


def test_float32_mixture_of_experts_compiles():
    """Transformers' MoE layers call grouped_mm on tpu for every dtype, also
    under torch.compile, whose shape function PyTorch limits to bf16."""
    torch.manual_seed(0)
    model = CAUSAL_LMS["mixtral"]()
    x = ids()
    want = model(x, labels=x).loss
    want.backward()
    tpu = copy.deepcopy(model).to("tpu")
    tpu.zero_grad()
    torch._dynamo.reset()
    got = torch.compile(tpu, backend="tpu")(to_tpu(x), labels=to_tpu(x)).loss
    got.backward()
    torch.testing.assert_close(got.cpu(), want, **TOL)
    for (name, pc), pt in zip(model.named_parameters(), tpu.parameters()):
        torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-3, atol=1e-4, msg=name)


def test_text_generation_pipeline_on_the_device():
    # A word-level tokenizer built in code (no files): the pipeline on
    # device="tpu" generates what it generates on CPU.
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(96)])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = T.PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>",
                                          bos_token="<s>", eos_token="</s>")
    torch.manual_seed(0)
    model = T.LlamaForCausalLM(T.LlamaConfig(vocab_size=100, **SMALL, num_key_value_heads=2, pad_token_id=0,
                                             bos_token_id=2, eos_token_id=3))
    want = T.pipeline("text-generation", model=model, tokenizer=tokenizer, device="cpu")("w1 w2 w3", max_new_tokens=5,
                                                                                        do_sample=False)
    on_tpu_pipe = T.pipeline("text-generation", model=model, tokenizer=tokenizer, device="tpu")
    assert on_tpu_pipe.device.type == "tpu"
    assert on_tpu_pipe("w1 w2 w3", max_new_tokens=5, do_sample=False) == want
