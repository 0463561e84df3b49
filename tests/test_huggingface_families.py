"""More Hugging Face model families on the device, each chosen for ops the
families of tests/test_huggingface.py do not reach: attention with sinks,
soft-capping and alternating sliding windows, multi-head latent attention
and grouped expert routing, state-space scans (Mamba-2's chunked scan,
Jamba's Mamba-1 loop beside experts), disentangled relative attention,
local / global attention over unpadded tokens, contrastive image-text
losses, shifted windows, overlapping patch embeddings with a resized
segmentation loss, and Diffusers' joint-attention transformers with
rotary embeddings. Outputs, losses and every gradient against CPU, small
random-weight configs built in code."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

T = pytest.importorskip("transformers")
D = pytest.importorskip("diffusers")

from test_huggingface import SMALL, assert_model_matches_cpu, ids  # noqa: E402


def rand(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def images(size=32, seed=1):
    return rand(2, 3, size, size, seed=seed)


def lm(model):
    x = ids()
    return model, dict(input_ids=x, labels=x)


FAMILIES = {
    "gemma3": lambda: lm(T.Gemma3ForCausalLM(T.Gemma3TextConfig(
        vocab_size=100, **SMALL, num_key_value_heads=2, head_dim=8, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], final_logit_softcapping=30.0))),
    "gpt_oss": lambda: lm(T.GptOssForCausalLM(T.GptOssConfig(
        vocab_size=100, **SMALL, num_key_value_heads=2, head_dim=8, num_local_experts=4, num_experts_per_tok=2,
        sliding_window=4, layer_types=["sliding_attention", "full_attention"]))),
    "deepseek_v3": lambda: lm(T.DeepseekV3ForCausalLM(T.DeepseekV3Config(
        vocab_size=100, **SMALL, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=16, kv_lora_rank=8, q_lora_rank=8, qk_rope_head_dim=4, qk_nope_head_dim=4,
        v_head_dim=8, n_group=2, topk_group=1, first_k_dense_replace=1))),
    "mamba2": lambda: lm(T.Mamba2ForCausalLM(T.Mamba2Config(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, state_size=8, head_dim=8, num_heads=8, n_groups=1,
        expand=2, chunk_size=4))),
    "jamba": lambda: lm(T.JambaForCausalLM(T.JambaConfig(
        vocab_size=100, **SMALL, num_key_value_heads=2, num_experts=2, num_experts_per_tok=1, attn_layer_period=2,
        attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1, mamba_d_state=8, mamba_dt_rank=4,
        use_mamba_kernels=False))),
    "deberta_v2": lambda: (T.DebertaV2ForSequenceClassification(T.DebertaV2Config(
        vocab_size=100, **SMALL, num_labels=3, relative_attention=True, position_buckets=8,
        pos_att_type=["p2c", "c2p"])), dict(input_ids=ids(), labels=torch.tensor([0, 2]))),
    "modernbert": lambda: (T.ModernBertForMaskedLM(T.ModernBertConfig(
        vocab_size=100, **SMALL, pad_token_id=0, global_attn_every_n_layers=2, local_attention=8)),
        dict(input_ids=ids(), attention_mask=torch.tensor([[1] * 12, [1] * 9 + [0] * 3]), labels=ids())),
    "clip": lambda: (T.CLIPModel(T.CLIPConfig(
        text_config=dict(vocab_size=100, **SMALL), vision_config=dict(**SMALL, image_size=32, patch_size=8))),
        dict(input_ids=ids(), pixel_values=images(), return_loss=True)),
    "swin": lambda: (T.SwinForImageClassification(T.SwinConfig(
        image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4, num_labels=3)),
        dict(pixel_values=images(), labels=torch.tensor([0, 1]))),
    "segformer": lambda: (T.SegformerForSemanticSegmentation(T.SegformerConfig(
        num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16], num_attention_heads=[1, 2],
        decoder_hidden_size=16, num_labels=3, strides=[4, 2], patch_sizes=[7, 3], mlp_ratios=[2, 2])),
        dict(pixel_values=images(), labels=torch.randint(0, 3, (2, 32, 32), generator=torch.Generator().manual_seed(5)))),
    "flux": lambda: (D.FluxTransformer2DModel(
        patch_size=1, in_channels=8, num_layers=1, num_single_layers=1, attention_head_dim=8, num_attention_heads=2,
        joint_attention_dim=16, pooled_projection_dim=16, axes_dims_rope=(2, 2, 4)),
        dict(hidden_states=rand(1, 16, 8, seed=1), encoder_hidden_states=rand(1, 4, 16, seed=2),
             pooled_projections=rand(1, 16, seed=3), timestep=torch.tensor([0.5]), img_ids=rand(16, 3, seed=4),
             txt_ids=torch.zeros(4, 3), return_dict=False)),
    "sd3": lambda: (D.SD3Transformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8, num_attention_heads=2,
        joint_attention_dim=16, caption_projection_dim=16, pooled_projection_dim=16, out_channels=4),
        dict(hidden_states=rand(1, 4, 8, 8, seed=1), encoder_hidden_states=rand(1, 4, 16, seed=2),
             pooled_projections=rand(1, 16, seed=3), timestep=torch.tensor([3]), return_dict=False)),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_forward_loss_and_gradients(family):
    torch.manual_seed(0)
    model, inputs = FAMILIES[family]()
    assert_model_matches_cpu(model, inputs)


@pytest.mark.parametrize("family", ["deepseek_v3", "mamba2", "flux"])
def test_family_in_fused_eager(family):
    # The families whose step mixes data-dependent routing (experts),
    # scans and joint attention, recorded into fused graphs.
    import torch_tpu

    torch.manual_seed(0)
    model, inputs = FAMILIES[family]()
    with torch_tpu.eager_mode("fused"):
        assert_model_matches_cpu(model, inputs)
