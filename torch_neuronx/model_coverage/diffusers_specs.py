"""Hand-written tiny specs of Diffusers model classes for the ``diffusers`` family
(:mod:`.diffusers_models`): ``__init__`` keyword arguments and forward inputs per class.

A class is here when the generic builder (:mod:`.diffusers_generic`) cannot reach it — sizes tied inside the
class that no parameter name reveals, forward inputs no name rule can build (packed sequences with their
index tensors, rotary tables, model-specific conditioning, noise drawn from a ``generator`` argument) —,
when its generic spec keeps the released number of stages and so costs the table minutes for code paths two
stages already run (KVAE, UNet3DCondition, UNetMotion), or when it is one of the seed's pipelines, whose
sizes follow the examples. Every size is tiny (at most a few hundred thousand parameters, inputs of 16 × 16
latents or a few dozen tokens); the values satisfy the rules the class checks at construction and in its
forward.
"""
from __future__ import annotations

from typing import Any

#: An input: a shape (seeded ``randn``), ``("timestep", n)`` (``[n]`` float steps), ``("arange", shape)``
#: (int64 coordinates), ``("ones_long", shape)``, ``("tensor", nested_list)`` (``torch.tensor`` of it:
#: int64, float32 or bool by its items), ``("list", [InputSpec, ...])`` (a Python list of those inputs),
#: ``("value", python_object)``, ``("generator", seed)`` (a CPU ``torch.Generator`` in that seed's state,
#: made anew for each forward: models that draw noise inside their forward).
InputSpec = Any

#: Class name -> (``__init__`` keyword arguments, forward inputs).
SPECS: dict[str, tuple[dict[str, Any], dict[str, InputSpec]]] = {
    "UNet2DModel": (
        {"sample_size": 16, "in_channels": 3, "out_channels": 3, "layers_per_block": 1,
         "block_out_channels": (16, 32), "down_block_types": ("DownBlock2D", "AttnDownBlock2D"),
         "up_block_types": ("AttnUpBlock2D", "UpBlock2D"), "norm_num_groups": 8, "attention_head_dim": 8},
        {"sample": (1, 3, 16, 16), "timestep": ("timestep", 1)}),
    "UNet2DConditionModel": (
        {"sample_size": 16, "in_channels": 4, "out_channels": 4, "layers_per_block": 1,
         "block_out_channels": (16, 32), "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"),
         "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D"), "cross_attention_dim": 32, "norm_num_groups": 8,
         "attention_head_dim": 8},
        {"sample": (1, 4, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 8, 32)}),
    "AutoencoderKL": (
        {"in_channels": 3, "out_channels": 3, "down_block_types": ("DownEncoderBlock2D",) * 2,
         "up_block_types": ("UpDecoderBlock2D",) * 2, "block_out_channels": (16, 32), "latent_channels": 4,
         "norm_num_groups": 8, "layers_per_block": 1},
        {"sample": (1, 3, 16, 16)}),
    "AutoencoderTiny": (
        {"in_channels": 3, "out_channels": 3, "encoder_block_out_channels": (16, 16),
         "decoder_block_out_channels": (16, 16), "num_encoder_blocks": (1, 1), "num_decoder_blocks": (1, 1),
         "latent_channels": 4},
        {"sample": (1, 3, 16, 16)}),
    "AutoencoderKLFlux2": (
        {"sample_size": 32, "in_channels": 3, "out_channels": 3, "down_block_types": ("DownEncoderBlock2D",) * 2,
         "up_block_types": ("UpDecoderBlock2D",) * 2, "block_out_channels": (8, 16), "layers_per_block": 1,
         "latent_channels": 4, "norm_num_groups": 4},
        {"sample": (1, 3, 16, 16)}),
    "AutoencoderKLQwenImage": (
        {"base_dim": 8, "z_dim": 4, "dim_mult": [1, 2], "num_res_blocks": 1, "temperal_downsample": [False]},
        {"sample": (1, 3, 1, 16, 16)}),
    "AutoencoderKLQwenImage21": (  # RGBA; 5 levels = the pipeline's 16x spatial compression
        {"base_dim": 8, "decoder_base_dim": 8, "z_dim": 4, "dim_mult": [1, 1, 1, 1, 1], "num_res_blocks": 1,
         "temperal_downsample": [False] * 4, "latents_mean": [0.0] * 4, "latents_std": [1.0] * 4},
        {"sample": (1, 4, 1, 32, 32)}),
    "AutoencoderKLWan": (
        {"base_dim": 8, "z_dim": 4, "dim_mult": [1, 2], "num_res_blocks": 1, "temperal_downsample": [False]},
        {"sample": (1, 3, 1, 16, 16)}),
    "VQModel": (
        {"block_out_channels": (8, 16), "norm_num_groups": 8, "in_channels": 3, "out_channels": 3,
         "down_block_types": ("DownEncoderBlock2D",) * 2, "up_block_types": ("UpDecoderBlock2D",) * 2,
         "latent_channels": 4, "num_vq_embeddings": 32},
        {"sample": (1, 3, 16, 16)}),
    "FluxTransformer2DModel": (
        {"patch_size": 1, "in_channels": 4, "num_layers": 1, "num_single_layers": 1, "attention_head_dim": 16,
         "num_attention_heads": 2, "joint_attention_dim": 32, "pooled_projection_dim": 32,
         "axes_dims_rope": [4, 4, 8]},
        {"hidden_states": (1, 16, 4), "encoder_hidden_states": (1, 8, 32), "pooled_projections": (1, 32),
         "img_ids": (16, 3), "txt_ids": (8, 3), "timestep": ("timestep", 1)}),
    "Flux2Transformer2DModel": (
        {"patch_size": 1, "in_channels": 4, "num_layers": 1, "num_single_layers": 1, "attention_head_dim": 16,
         "num_attention_heads": 2, "joint_attention_dim": 32, "timestep_guidance_channels": 256,
         "axes_dims_rope": [4, 4, 4, 4]},
        {"hidden_states": (1, 16, 4), "encoder_hidden_states": (1, 8, 32), "img_ids": ("arange", (1, 16, 4)),
         "txt_ids": ("arange", (1, 8, 4)), "timestep": ("timestep", 1), "guidance": ("timestep", 1)}),
    "QwenImageTransformer2DModel": (
        {"patch_size": 2, "in_channels": 16, "out_channels": 4, "num_layers": 2, "attention_head_dim": 16,
         "num_attention_heads": 2, "joint_attention_dim": 16, "axes_dims_rope": (8, 4, 4)},
        {"hidden_states": (1, 16, 16), "encoder_hidden_states": (1, 8, 16),
         "encoder_hidden_states_mask": ("ones_long", (1, 8)), "timestep": ("timestep", 1),
         "img_shapes": ("value", [(1, 4, 4)])}),
    # The seed's Qwen-Image-2.1 and H3 (examples/qwen_image21.py, examples/h3.py sizes). Qwen-Image-2.1: 8 text
    # rows then the target image's 4 slots of 2x2 latent tokens (a 4x4 image, 16 rows of ``hidden_states``).
    "QwenImage21Transformer2DModel": (
        {"patch_size": 1, "in_channels": 4, "out_channels": 4, "num_layers": 2, "attention_head_dim": 16,
         "num_attention_heads": 2, "context_in_dim": 16, "mlp_ratio": 2, "axes_dims_rope": (4, 6, 6)},
        {"hidden_states": (1, 16, 4), "encoder_hidden_states": (1, 8, 16), "timestep": ("tensor", [0.5]),
         "img_shapes": ("value", [[(1, 4, 4)]]), "img_mask": ("tensor", [[False] * 8 + [True] * 4])}),
    # H3: one packed sequence of 8 video rows (2x4x1 patches of 1x2x2), 6 text rows and 4 audio rows.
    "MiniMaxH3Transformer3DModel": (
        {"num_attention_heads": 2, "attention_head_dim": 16, "hidden_size": 24, "num_layers": 2,
         "num_refiner_layers": 2, "ffn_dim": 32, "in_channels": 4, "audio_in_channels": 8, "patch_size": (1, 2, 2),
         "text_dim": 16, "freq_dim": 8, "time_embed_hidden_dim": 24, "time_embed_dim": 16, "rope_freq_dim": 2},
        {"hidden_states": (1, 8, 16), "audio_hidden_states": (1, 4, 8), "encoder_hidden_states": (1, 6, 16),
         "timestep": ("tensor", [0.5, 0.0]), "timestep_indices": ("tensor", [0] * 8 + [1] * 6 + [0] * 4),
         "token_tags": ("tensor", [0] * 8 + [1] * 6 + [2] * 4),
         "position_ids": ("tensor", [[t, h, w] for t in range(2) for h in range(4) for w in range(1)]
                          + [[i, 0, 0] for i in range(6)] + [[i, 0, 0] for i in range(4)]),
         "video_indices": ("tensor", list(range(8))), "text_indices": ("tensor", list(range(8, 14))),
         "audio_indices": ("tensor", list(range(14, 18)))}),
    "AutoencoderKLMiniMaxH3": (
        {"in_channels": 3, "out_channels": 3, "latent_channels": 4, "block_out_channels": (8, 16),
         "layers_per_block": 1, "spatial_downsample_factors": (2, 2), "temporal_downsample_factors": (2, 2),
         "norm_num_groups": 8,
         "decoder_num_layers": 2, "decoder_num_attention_heads": 2, "decoder_attention_head_dim": 8,
         "decoder_num_register_tokens": 2, "decoder_ffn_mult": 2, "clip_length": 17, "token_drop": 3,
         "latents_mean": (0.0,) * 4, "latents_std": (1.0,) * 4},
        {"sample": (1, 3, 21, 16, 16), "sample_posterior": ("value", False)}),  # two 17-frame clips, overlapping
    "AutoencoderKLMiniMaxH3Audio": (
        {"encoder_dim": 4, "encoder_rates": (2, 2), "latent_dim": 32, "latent_channels": 8, "num_attention_heads": 2,
         "decoder_dim": 16, "decoder_rates": (2, 2), "decoder_kernel_sizes": (4, 4), "resblock_kernel_sizes": (3, 7),
         "resblock_dilation_sizes": ((1, 3), (1, 3)), "sampling_rate": 32000, "latents_mean": [0.0] * 8,
         "latents_std": [1.0] * 8},
        {"sample": (1, 1, 256), "sample_posterior": ("value", False)}),
    "SD3Transformer2DModel": (
        {"sample_size": 8, "patch_size": 2, "in_channels": 4, "num_layers": 1, "attention_head_dim": 8,
         "num_attention_heads": 2, "joint_attention_dim": 32, "caption_projection_dim": 16,
         "pooled_projection_dim": 16, "out_channels": 4},
        {"hidden_states": (1, 4, 8, 8), "encoder_hidden_states": (1, 8, 32), "pooled_projections": (1, 16),
         "timestep": ("timestep", 1)}),
    "PixArtTransformer2DModel": (
        {"sample_size": 8, "num_layers": 1, "patch_size": 2, "attention_head_dim": 8, "num_attention_heads": 2,
         "in_channels": 4, "out_channels": 8, "cross_attention_dim": 16, "caption_channels": 16,
         "norm_num_groups": 8, "use_additional_conditions": False},
        {"hidden_states": (1, 4, 8, 8), "encoder_hidden_states": (1, 8, 16), "timestep": ("timestep", 1),
         "added_cond_kwargs": ("value", {"aspect_ratio": None, "resolution": None})}),
    "DiTTransformer2DModel": (
        {"sample_size": 8, "num_layers": 1, "patch_size": 2, "attention_head_dim": 8, "num_attention_heads": 2,
         "in_channels": 4, "out_channels": 8, "num_embeds_ada_norm": 8, "norm_num_groups": 8},
        {"hidden_states": (1, 4, 8, 8), "timestep": ("timestep", 1), "class_labels": ("ones_long", (1,))}),

    # Classes the generic builder cannot reach (sizes tied inside the class, inputs no name rule builds).
    "AceStepTransformer1DModel": (
        {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 8, "in_channels": 24, "audio_acoustic_hidden_dim": 8, "patch_size": 2,
         "sliding_window": 16},
        {"hidden_states": (1, 8, 8), "timestep": ("tensor", [0.5]), "timestep_r": ("tensor", [0.3]),
         "encoder_hidden_states": (1, 10, 32), "context_latents": (1, 8, 16)}),
    "AnyFlowTransformer3DModel": (  # frames before channels
        {"patch_size": (1, 2, 2), "num_attention_heads": 2, "attention_head_dim": 12, "in_channels": 4,
         "out_channels": 4, "text_dim": 16, "freq_dim": 32, "ffn_dim": 32, "num_layers": 2, "cross_attn_norm": True,
         "rope_max_seq_len": 32, "deltatime_type": "r"},
        {"hidden_states": (1, 2, 4, 16, 16), "timestep": ("tensor", [[500.0, 500.0]]),
         "r_timestep": ("tensor", [[250.0, 250.0]]), "encoder_hidden_states": (1, 12, 16)}),
    "AnyFlowFARTransformer3DModel": (  # 4 frames in two causal chunks of 2
        {"patch_size": (1, 2, 2), "compressed_patch_size": (1, 4, 4), "full_chunk_limit": 3, "num_attention_heads": 2,
         "attention_head_dim": 12, "in_channels": 4, "out_channels": 4, "text_dim": 16, "freq_dim": 32,
         "ffn_dim": 32, "num_layers": 2, "cross_attn_norm": True, "rope_max_seq_len": 32, "deltatime_type": "r"},
        {"hidden_states": (1, 4, 4, 16, 16), "timestep": ("tensor", [[500.0] * 4]),
         "r_timestep": ("tensor", [[250.0] * 4]), "encoder_hidden_states": (1, 12, 16),
         "chunk_partition": ("value", [2, 2])}),
    "AutoencoderKLKVAE": (  # 32 channels (fixed 32-group norms), two stages: one down- and one up-sampling
        {"in_channels": 3, "channels": 32, "num_enc_blocks": 1, "num_dec_blocks": 1, "z_channels": 4,
         "ch_mult": (1, 2), "sample_size": 16},
        {"sample": (1, 3, 16, 16)}),
    "AutoencoderKLKVAEVideo": (  # 32 channels: its group norms have a fixed 32 groups
        {"ch": 32, "ch_mult": (1, 2), "num_res_blocks": 1, "in_channels": 3, "out_ch": 3, "z_channels": 4,
         "temporal_compress_times": 2},
        {"sample": (1, 3, 3, 16, 16)}),
    "AutoencoderKLLTX2Video": (  # 4 stages of 8 channels, one per down-sampling kind; 1 + 8 frames
        {"in_channels": 3, "out_channels": 3, "latent_channels": 8, "block_out_channels": (8, 8, 8, 8),
         "decoder_block_out_channels": (16, 32, 64), "layers_per_block": (1, 1, 1, 1, 1),
         "decoder_layers_per_block": (1, 1, 1, 1), "spatio_temporal_scaling": (True, True, True, True),
         "decoder_spatio_temporal_scaling": (True, True, True), "decoder_inject_noise": (False,) * 4,
         "downsample_type": ("spatial", "temporal", "spatiotemporal", "spatiotemporal"),
         "upsample_residual": (True, True, True), "upsample_factor": (2, 2, 2), "timestep_conditioning": False,
         "patch_size": 1, "patch_size_t": 1, "encoder_causal": True, "decoder_causal": False},
        {"sample": (1, 3, 9, 16, 16)}),
    "AutoencoderKLMochi": (  # 15 input channels: the encoder's Fourier features of RGB
        {"in_channels": 15, "out_channels": 3, "latent_channels": 4, "encoder_block_out_channels": (32,) * 4,
         "decoder_block_out_channels": (32,) * 4, "layers_per_block": (1, 1, 1, 1, 1)},
        {"sample": (1, 3, 7, 16, 16)}),
    "UNet3DConditionModel": (  # each block type once; 2 frames so the temporal layers mix frames
        {"in_channels": 4, "out_channels": 4, "block_out_channels": (16, 32),
         "down_block_types": ("CrossAttnDownBlock3D", "DownBlock3D"),
         "up_block_types": ("UpBlock3D", "CrossAttnUpBlock3D"),
         "layers_per_block": 1, "norm_num_groups": 8, "cross_attention_dim": 32, "attention_head_dim": 8},
        {"sample": (1, 4, 2, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 8, 32)}),
    "UNetMotionModel": (  # AnimateDiff: each block type once, motion modules over 2 frames
        {"in_channels": 4, "out_channels": 4, "block_out_channels": (16, 32),
         "down_block_types": ("CrossAttnDownBlockMotion", "DownBlockMotion"),
         "up_block_types": ("UpBlockMotion", "CrossAttnUpBlockMotion"), "layers_per_block": 1, "norm_num_groups": 8,
         "cross_attention_dim": 32, "num_attention_heads": 2, "motion_num_attention_heads": 2,
         "motion_max_seq_length": 8},
        {"sample": (1, 4, 2, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (2, 8, 32)}),
    "ConsistencyDecoderVAE": (  # a 2-step consistency decoder UNet that draws its noise from `generator`
        {"latent_channels": 4, "sample_size": 16, "encoder_block_out_channels": (16, 32),
         "encoder_down_block_types": ("DownEncoderBlock2D",) * 2, "encoder_layers_per_block": 1,
         "encoder_norm_num_groups": 8, "decoder_block_out_channels": (16, 32),
         "decoder_down_block_types": ("ResnetDownsampleBlock2D",) * 2,
         "decoder_up_block_types": ("ResnetUpsampleBlock2D",) * 2, "decoder_layers_per_block": 1,
         "decoder_norm_num_groups": 8},
        {"sample": (1, 3, 16, 16), "generator": ("generator", 0)}),
    "AutoencoderOobleck": (
        {"encoder_hidden_size": 12, "decoder_channels": 12, "decoder_input_channels": 6, "audio_channels": 2,
         "downsampling_ratios": [2, 4], "channel_multiples": [1, 2]},
        {"sample": (1, 2, 24), "sample_posterior": ("value", False)}),
    "BriaFiboTransformer2DModel": (  # text states of two encoder layers besides the joint ones
        {"patch_size": 1, "in_channels": 48, "num_layers": 1, "num_single_layers": 1, "attention_head_dim": 8,
         "num_attention_heads": 2, "joint_attention_dim": 64, "text_encoder_dim": 32, "pooled_projection_dim": None,
         "axes_dims_rope": [0, 4, 4]},
        {"hidden_states": (1, 16, 48), "encoder_hidden_states": (1, 8, 64), "img_ids": ("arange", (16, 3)),
         "txt_ids": ("arange", (8, 3)), "timestep": ("tensor", [1.0]),
         "text_encoder_layers": ("list", [(1, 8, 32), (1, 8, 32)])}),
    "CogVideoXTransformer3DModel": (  # frames before channels; heads x head size divisible by 16
        {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 4, "out_channels": 4, "time_embed_dim": 2,
         "text_embed_dim": 8, "num_layers": 2, "sample_width": 8, "sample_height": 8, "sample_frames": 8,
         "patch_size": 2, "temporal_compression_ratio": 4, "max_text_seq_length": 8},
        {"hidden_states": (1, 1, 4, 8, 8), "encoder_hidden_states": (1, 8, 8), "timestep": ("timestep", 1)}),
    "ConsisIDTransformer3DModel": (  # identity features: one ViT hidden state and the face embedding
        {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 4, "out_channels": 4, "time_embed_dim": 2,
         "text_embed_dim": 8, "num_layers": 1, "sample_width": 8, "sample_height": 8, "sample_frames": 8,
         "patch_size": 2, "temporal_compression_ratio": 4, "max_text_seq_length": 8, "cross_attn_interval": 1,
         "is_kps": False, "is_train_face": True, "cross_attn_dim_head": 1, "cross_attn_num_heads": 1,
         "LFE_id_dim": 2, "LFE_vit_dim": 2, "LFE_depth": 5, "LFE_dim_head": 8, "LFE_num_heads": 2,
         "LFE_num_id_token": 1, "LFE_num_querie": 1, "LFE_output_dim": 10, "LFE_ff_mult": 1, "LFE_num_scale": 1},
        {"hidden_states": (1, 1, 4, 8, 8), "encoder_hidden_states": (1, 8, 8), "timestep": ("timestep", 1),
         "id_vit_hidden": ("list", [(1, 2, 2)]), "id_cond": (1, 2)}),
    "Cosmos3AVAEAudioTokenizer": (
        {"sampling_rate": 16, "hop_size": 4, "input_channels": 1, "stereo": True, "enc_dim": 4, "enc_num_blocks": 1,
         "enc_n_fft": 8, "enc_hop_length": 2, "enc_latent_dim": 8, "enc_c_mults": (1,), "enc_strides": (2,),
         "vocoder_input_dim": 4, "dec_dim": 4, "dec_c_mults": (1, 2), "dec_strides": (2, 2), "dec_out_channels": 2},
        {"sample": (1, 2, 16)}),
    "CosmosTransformer3DModel": (  # no padding-mask input: resizing it needs torchvision, not installed
        {"in_channels": 4, "out_channels": 4, "num_attention_heads": 2, "attention_head_dim": 12, "num_layers": 2,
         "mlp_ratio": 2, "text_embed_dim": 16, "adaln_lora_dim": 4, "max_size": (4, 32, 32), "patch_size": (1, 2, 2),
         "rope_scale": (2.0, 1.0, 1.0), "concat_padding_mask": False, "extra_pos_embed_type": "learnable"},
        {"hidden_states": (1, 4, 1, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 12, 16),
         "attention_mask": ("tensor", [[1.0] * 12]), "fps": ("value", 30)}),
    "EasyAnimateTransformer3DModel": (
        {"attention_head_dim": 16, "num_attention_heads": 2, "in_channels": 4, "mmdit_layers": 2, "num_layers": 2,
         "out_channels": 4, "patch_size": 2, "sample_height": 60, "sample_width": 90, "text_embed_dim": 16,
         "time_embed_dim": 8, "time_position_encoding_type": "3d_rope", "timestep_activation_fn": "silu"},
        {"hidden_states": (1, 4, 2, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 16, 16)}),
    "GlmImageTransformer2DModel": (  # the prior's image token ids condition the denoiser
        {"patch_size": 2, "in_channels": 4, "out_channels": 4, "num_layers": 1, "attention_head_dim": 8,
         "num_attention_heads": 2, "text_embed_dim": 32, "time_embed_dim": 16, "condition_dim": 8,
         "prior_vq_quantizer_codebook_size": 64},
        {"hidden_states": (1, 4, 8, 8), "encoder_hidden_states": (1, 12, 32),
         "prior_token_id": ("tensor", [[(7 * i) % 64 for i in range(16)]]), "prior_token_drop": ("tensor", [False]),
         "timestep": ("timestep", 1), "target_size": ("tensor", [[8.0, 8.0]]),
         "crop_coords": ("tensor", [[0.0, 0.0]])}),
    "HeliosTransformer3DModel": (  # short, mid and long history latents with their frame indices
        {"patch_size": (1, 2, 2), "num_attention_heads": 2, "attention_head_dim": 12, "in_channels": 4,
         "out_channels": 4, "text_dim": 16, "freq_dim": 32, "ffn_dim": 32, "num_layers": 2, "cross_attn_norm": True,
         "qk_norm": "rms_norm_across_heads", "rope_dim": (4, 4, 4), "has_multi_term_memory_patch": True,
         "guidance_cross_attn": True, "zero_history_timestep": True, "is_amplify_history": False},
        {"hidden_states": (1, 4, 2, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 12, 16),
         "indices_hidden_states": ("tensor", [[5.0, 6.0]]), "indices_latents_history_short": ("tensor", [[4.0]]),
         "indices_latents_history_mid": ("tensor", [[3.0]]),
         "indices_latents_history_long": ("tensor", [[0.0, 1.0, 2.0, 3.0]]),
         "latents_history_short": (1, 4, 1, 16, 16), "latents_history_mid": (1, 4, 1, 16, 16),
         "latents_history_long": (1, 4, 4, 16, 16)}),
    "HiDreamImageTransformer2DModel": (  # T5 states and two Llama layers' states, mixture-of-experts FFN
        {"patch_size": 2, "in_channels": 4, "out_channels": 4, "num_layers": 1, "num_single_layers": 1,
         "attention_head_dim": 8, "num_attention_heads": 4, "caption_channels": [8, 4], "text_emb_dim": 8,
         "num_routed_experts": 2, "num_activated_experts": 2, "axes_dims_rope": (4, 2, 2), "max_resolution": (32, 32),
         "llama_layers": (0, 1), "force_inference_output": True},
        {"hidden_states": (1, 4, 16, 16), "encoder_hidden_states_t5": (1, 8, 8),
         "encoder_hidden_states_llama3": (2, 1, 8, 4), "pooled_embeds": (1, 8), "timesteps": ("timestep", 1)}),
    "HunyuanDiT2DModel": (  # CLIP and T5 states, image meta sizes, a style id and the rotary table (cos, sin)
        {"sample_size": 8, "patch_size": 2, "in_channels": 4, "num_layers": 1, "attention_head_dim": 8,
         "num_attention_heads": 2, "cross_attention_dim": 8, "cross_attention_dim_t5": 8, "pooled_projection_dim": 4,
         "hidden_size": 16, "text_len": 4, "text_len_t5": 4, "activation_fn": "gelu-approximate"},
        {"hidden_states": (1, 4, 8, 8), "encoder_hidden_states": (1, 4, 8),
         "text_embedding_mask": ("tensor", [[1.0] * 4]),
         "encoder_hidden_states_t5": (1, 4, 8), "text_embedding_mask_t5": ("tensor", [[1.0] * 4]),
         "timestep": ("timestep", 1), "image_meta_size": ("tensor", [[64.0, 64.0, 64.0, 64.0, 0.0, 0.0]]),
         "style": ("tensor", [0]), "image_rotary_emb": ("list", [(16, 8), (16, 8)])}),
    "HunyuanVideo15Transformer3DModel": (
        {"in_channels": 4, "out_channels": 4, "num_attention_heads": 2, "attention_head_dim": 8, "num_layers": 2,
         "num_refiner_layers": 1, "mlp_ratio": 2.0, "patch_size": 1, "patch_size_t": 1, "text_embed_dim": 16,
         "text_embed_2_dim": 8, "image_embed_dim": 12, "rope_axes_dim": (2, 2, 4), "target_size": 16,
         "task_type": "t2v"},
        {"hidden_states": (1, 4, 1, 8, 8), "timestep": ("tensor", [1.0]), "encoder_hidden_states": (1, 6, 16),
         "encoder_hidden_states_2": (1, 4, 8), "encoder_attention_mask": ("tensor", [[1.0] * 6]),
         "encoder_attention_mask_2": ("tensor", [[1.0] * 4]), "image_embeds": (1, 3, 12)}),
    "HunyuanVideoFramepackTransformer3DModel": (  # clean and 2x / 4x history latents with their frame indices
        {"in_channels": 4, "out_channels": 4, "num_attention_heads": 2, "attention_head_dim": 10, "num_layers": 1,
         "num_single_layers": 1, "num_refiner_layers": 1, "patch_size": 2, "patch_size_t": 1, "guidance_embeds": True,
         "text_embed_dim": 16, "pooled_projection_dim": 8, "rope_axes_dim": (2, 4, 4), "image_condition_type": None,
         "has_image_proj": True, "image_proj_dim": 16, "has_clean_x_embedder": True},
        {"hidden_states": (1, 4, 3, 4, 4), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 12, 16),
         "pooled_projections": (1, 8), "encoder_attention_mask": ("tensor", [[1.0] * 12]),
         "guidance": ("tensor", [3.5]), "image_embeds": (1, 12, 16), "indices_latents": ("tensor", [3.0, 4.0, 5.0]),
         "latents_clean": (1, 4, 2, 4, 4), "indices_latents_clean": ("tensor", [0.0, 6.0]),
         "latents_history_2x": (1, 4, 2, 4, 4), "indices_latents_history_2x": ("tensor", [7.0, 8.0]),
         "latents_history_4x": (1, 4, 8, 4, 4),
         "indices_latents_history_4x": ("tensor", [float(i) for i in range(9, 17)])}),
    "Ideogram4Transformer2DModel": (  # one packed sequence: 4 text rows, then a 2 x 2 image
        {"in_channels": 16, "num_layers": 2, "attention_head_dim": 8, "num_attention_heads": 4, "intermediate_size": 32,
         "adaln_dim": 16, "llm_features_dim": 24, "mrope_section": (2, 1, 1)},
        {"hidden_states": (1, 8, 16), "encoder_hidden_states": (1, 8, 24), "timestep": ("tensor", [0.5]),
         "position_ids": ("tensor", [[[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3], [65536, 65536, 65536],
                                      [65536, 65536, 65537], [65536, 65537, 65536], [65536, 65537, 65537]]]),
         "segment_ids": ("tensor", [[1] * 8]), "indicator": ("tensor", [[3, 3, 3, 3, 2, 2, 2, 2]])}),
    "JoyImageEditPlusTransformer3DModel": (  # two images of one 2 x 2 patch each, with their shapes
        {"patch_size": [1, 2, 2], "in_channels": 16, "hidden_size": 32, "num_attention_heads": 2, "text_dim": 16,
         "num_layers": 2, "rope_dim_list": [4, 6, 6], "theta": 256},
        {"hidden_states": (1, 2, 16, 1, 2, 2), "encoder_hidden_states": (1, 12, 16), "timestep": ("tensor", [1.0]),
         "shape_list": ("value", [[(1, 1, 1), (1, 1, 1)]])}),
    "Krea2Transformer2DModel": (  # text states of 3 encoder layers; positions of 4 text + 4 image rows
        {"in_channels": 16, "num_layers": 2, "attention_head_dim": 8, "num_attention_heads": 4,
         "num_key_value_heads": 2,
         "intermediate_size": 32, "timestep_embed_dim": 8, "text_hidden_dim": 16, "num_text_layers": 3,
         "text_num_attention_heads": 2, "text_num_key_value_heads": 1, "text_intermediate_size": 16,
         "num_layerwise_text_blocks": 1, "num_refiner_text_blocks": 1, "axes_dims_rope": (4, 2, 2)},
        {"hidden_states": (1, 4, 16), "encoder_hidden_states": (1, 4, 3, 16), "timestep": ("tensor", [0.5]),
         "position_ids": ("tensor", [[float(i), 0.0, 0.0] for i in range(4)]
                          + [[4.0, float(h), float(w)] for h in range(2) for w in range(2)]),
         "encoder_attention_mask": ("tensor", [[True, True, True, False]])}),
    "LTX2VideoTransformer3DModel": (  # video and audio streams: 2 x 4 x 4 video tokens, 9 audio frames
        {"in_channels": 4, "out_channels": 4, "patch_size": 1, "patch_size_t": 1, "num_attention_heads": 2,
         "attention_head_dim": 8, "cross_attention_dim": 16, "audio_in_channels": 4, "audio_out_channels": 4,
         "audio_num_attention_heads": 2, "audio_attention_head_dim": 4, "audio_cross_attention_dim": 8,
         "num_layers": 2, "qk_norm": "rms_norm_across_heads", "caption_channels": 16, "rope_double_precision": False},
        {"hidden_states": (1, 32, 4), "audio_hidden_states": (1, 9, 4), "encoder_hidden_states": (1, 16, 16),
         "audio_encoder_hidden_states": (1, 16, 16), "timestep": ("tensor", [500.0]),
         "encoder_attention_mask": ("tensor", [[True] * 16]), "num_frames": ("value", 2), "height": ("value", 4),
         "width": ("value", 4), "audio_num_frames": ("value", 9), "fps": ("value", 25.0)}),
    "LongCatAudioDiTTransformer": (
        {"dit_dim": 64, "dit_depth": 2, "dit_heads": 4, "dit_text_dim": 32, "latent_dim": 8, "text_conv": False},
        {"hidden_states": (1, 16, 8), "encoder_hidden_states": (1, 10, 32),
         "encoder_attention_mask": ("tensor", [[True] * 10]), "attention_mask": ("tensor", [[True] * 16]),
         "timestep": ("tensor", [1.0])}),
    "MiniMaxMusic3Transformer1DModel": (  # channels last: [1, frames, channels]
        {"in_channels": 8, "condition_dim": 16, "num_layers": 2, "num_attention_heads": 2, "attention_head_dim": 8,
         "ff_inner_dim": 32, "rotary_dim": 4, "fourier_embedding_dim": 8},
        {"hidden_states": (1, 8, 24), "encoder_hidden_states": (1, 24, 16), "timestep": ("tensor", [0.5])}),
    "OmniGenTransformer2DModel": (  # 24 prompt ids with one 8 x 8 input image in them, then the target's 16
        {"hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 32,
         "num_layers": 2, "pad_token_id": 0, "vocab_size": 1000, "in_channels": 4, "time_step_dim": 4,
         "rope_scaling": {"long_factor": [1, 2], "short_factor": [1, 2]}},
        {"hidden_states": (1, 4, 8, 8), "timestep": ("tensor", [0.5]),
         "input_ids": ("tensor", [[(7 * i + 3) % 10 for i in range(24)]]),
         "input_img_latents": ("list", [(1, 4, 8, 8)]),
         "input_image_sizes": ("value", {0: [[0, 16]]}), "attention_mask": ("tensor", [[[1.0] * 41] * 41]),
         "position_ids": ("tensor", [list(range(41))])}),
    "PRXTransformer2DModel": (  # rotary axes sum to the head size (64 / 2 heads)
        {"in_channels": 16, "patch_size": 2, "context_in_dim": 32, "hidden_size": 64, "mlp_ratio": 2.0,
         "num_heads": 2, "depth": 1, "axes_dim": [16, 16]},
        {"hidden_states": (1, 16, 16, 16), "encoder_hidden_states": (1, 8, 32), "timestep": ("tensor", [1.0])}),
    "PriorTransformer": (  # unCLIP's prior: image embedding from the text embedding and projection
        {"num_attention_heads": 2, "attention_head_dim": 4, "num_layers": 2, "embedding_dim": 8, "num_embeddings": 7,
         "additional_embeddings": 4},
        {"hidden_states": (1, 8), "timestep": ("value", 2), "proj_embedding": (1, 8),
         "encoder_hidden_states": (1, 7, 8)}),
    "StableAudio3DiTModel": (  # channels first: [1, channels, frames]
        {"io_channels": 8, "patch_size": 1, "embed_dim": 32, "depth": 2, "num_heads": 4, "cond_token_dim": 16,
         "global_cond_dim": 12, "local_add_cond_dim": 5, "timestep_features_dim": 16, "ff_mult": 2,
         "num_memory_tokens": 3, "use_differential_attention": False},
        {"hidden_states": (1, 8, 16), "timestep": ("tensor", [0.5]), "encoder_hidden_states": (1, 4, 16),
         "global_hidden_states": (1, 12)}),
    "TransformerTemporalModel": (  # 8 x 8 frames attend over time; 8 heads of 4 = 32 channels
        {"num_attention_heads": 8, "attention_head_dim": 4, "in_channels": 4, "num_layers": 1, "norm_num_groups": 1},
        {"hidden_states": (2, 4, 8, 8), "timestep": ("timestep", 1), "num_frames": ("value", 2)}),
    "UNet1DModel": (
        {"block_out_channels": (8, 8, 16, 16), "in_channels": 14, "out_channels": 14,
         "time_embedding_type": "positional", "use_timestep_embedding": True, "flip_sin_to_cos": False,
         "freq_shift": 1.0, "out_block_type": "OutConv1DBlock", "mid_block_type": "MidResTemporalBlock1D",
         "down_block_types": ("DownResnetBlock1D",) * 4, "up_block_types": ("UpResnetBlock1D",) * 3, "act_fn": "swish"},
        {"sample": (1, 14, 16), "timestep": ("tensor", [10])}),
    "UNetSpatioTemporalConditionModel": (  # Stable Video Diffusion: frames before channels, fps/motion/noise ids
        {"block_out_channels": (32, 64), "down_block_types": ("CrossAttnDownBlockSpatioTemporal",
         "DownBlockSpatioTemporal"),
         "up_block_types": ("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"), "cross_attention_dim": 32,
         "num_attention_heads": 8, "out_channels": 4, "in_channels": 4, "layers_per_block": 1, "sample_size": 16,
         "projection_class_embeddings_input_dim": 96, "addition_time_embed_dim": 32},
        {"sample": (1, 2, 4, 16, 16), "timestep": ("tensor", [10.0]), "encoder_hidden_states": (1, 1, 32),
         "added_time_ids": ("tensor", [[6.0, 127.0, 0.02]])}),
    "WanAnimateTransformer3DModel": (  # pose and face videos besides the latents
        {"patch_size": (1, 2, 2), "num_attention_heads": 2, "attention_head_dim": 12, "in_channels": 12,
         "latent_channels": 4, "out_channels": 4, "text_dim": 16, "freq_dim": 32, "ffn_dim": 32, "num_layers": 2,
         "cross_attn_norm": True, "qk_norm": "rms_norm_across_heads", "image_dim": 16, "rope_max_seq_len": 32,
         "motion_encoder_channel_sizes": {"4": 16, "8": 16, "16": 16}, "motion_encoder_size": 16,
         "motion_style_dim": 8, "motion_dim": 4, "motion_encoder_dim": 16, "face_encoder_hidden_dim": 16,
         "face_encoder_num_heads": 2, "inject_face_latents_blocks": 2},
        {"hidden_states": (1, 12, 21, 16, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 12, 16),
         "encoder_hidden_states_image": (1, 12, 16), "pose_hidden_states": (1, 4, 20, 16, 16),
         "face_pixel_values": (1, 3, 77, 16, 16)}),
    "WanVACETransformer3DModel": (  # control blocks after layers 0 and 2 of 4
        {"patch_size": (1, 2, 2), "num_attention_heads": 2, "attention_head_dim": 12, "in_channels": 16,
         "out_channels": 16, "text_dim": 32, "freq_dim": 32, "ffn_dim": 32, "num_layers": 4, "cross_attn_norm": True,
         "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 32, "vace_layers": [0, 2], "vace_in_channels": 48},
        {"hidden_states": (1, 16, 2, 16, 16), "encoder_hidden_states": (1, 12, 32),
         "control_hidden_states": (1, 48, 2, 16, 16), "timestep": ("timestep", 1)}),
    "Transformer2DModel": (  # the continuous-input spatial transformer of Stable Diffusion's UNets
        {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 16, "norm_num_groups": 8,
         "cross_attention_dim": 32, "num_layers": 1},
        {"hidden_states": (1, 16, 8, 8), "encoder_hidden_states": (1, 8, 32)}),
    "StableAudioDiTModel": (  # the rotary table (cos, sin) covers the 16 latent frames and the duration token
        {"sample_size": 16, "in_channels": 8, "num_layers": 1, "attention_head_dim": 8, "num_attention_heads": 2,
         "num_key_value_attention_heads": 1, "out_channels": 8, "cross_attention_dim": 16, "time_proj_dim": 16,
         "global_states_input_dim": 16, "cross_attention_input_dim": 16},
        {"hidden_states": (1, 8, 16), "timestep": ("timestep", 1), "encoder_hidden_states": (1, 4, 16),
         "global_hidden_states": (1, 1, 16), "rotary_embedding": ("list", [(17, 4), (17, 4)])}),
    "UVit2DModel": (  # aMUSEd: 4 x 4 image token ids; 5 micro-conditions of 4 features each
        {"hidden_size": 32, "cond_embed_dim": 16, "micro_cond_encode_dim": 4, "micro_cond_embed_dim": 20,
         "encoder_hidden_size": 16, "vocab_size": 32, "codebook_size": 16, "in_channels": 16,
         "block_out_channels": 16, "num_res_blocks": 1, "block_num_heads": 2, "num_hidden_layers": 1,
         "num_attention_heads": 2, "intermediate_size": 32, "sample_size": 4},
        {"input_ids": ("tensor", [[[(3 * h + w) % 16 for w in range(4)] for h in range(4)]]),
         "encoder_hidden_states": (1, 8, 16), "pooled_text_emb": (1, 16),
         "micro_conds": ("tensor", [[64.0, 64.0, 0.0, 0.0, 6.0]])}),
    "I2VGenXLUNet": (
        {"sample_size": 16, "in_channels": 4, "out_channels": 4, "down_block_types": ("CrossAttnDownBlock3D",
         "DownBlock3D"),
         "up_block_types": ("UpBlock3D", "CrossAttnUpBlock3D"), "block_out_channels": (16, 32), "layers_per_block": 1,
         "norm_num_groups": 8, "cross_attention_dim": 32, "attention_head_dim": 8},
        {"sample": (1, 4, 2, 16, 16), "timestep": ("timestep", 1), "fps": ("tensor", [8]),
         "image_latents": (1, 4, 2, 16, 16), "image_embeddings": (1, 32), "encoder_hidden_states": (1, 8, 32)}),
    "T5FilmDecoder": (  # spectrogram diffusion: one encoder's states and mask condition the decoder
        {"input_dims": 8, "targets_length": 16, "d_model": 32, "num_layers": 1, "num_heads": 2, "d_kv": 16, "d_ff": 64},
        {"encodings_and_masks": ("list", [("list", [(1, 8, 32), ("tensor", [[True] * 8])])]),
         "decoder_input_tokens": (1, 16, 8), "decoder_noise_time": ("tensor", [0.5])}),
    "AutoencoderKLHunyuanImage": (  # no defaults: every size given
        {"in_channels": 3, "out_channels": 3, "latent_channels": 4, "block_out_channels": (32, 64),
         "layers_per_block": 1, "spatial_compression_ratio": 2, "sample_size": 16},
        {"sample": (1, 3, 16, 16)}),
    "Kandinsky5Transformer3DModel": (  # latents channels last [1, F, H, W, C]; rotary positions per axis
        {"in_visual_dim": 4, "in_text_dim": 32, "in_text_dim2": 16, "time_dim": 32, "out_visual_dim": 4,
         "patch_size": (1, 2, 2), "model_dim": 64, "ff_dim": 128, "num_text_blocks": 1, "num_visual_blocks": 1,
         "axes_dims": (8, 12, 12)},
        {"hidden_states": (1, 1, 8, 8, 4), "encoder_hidden_states": (8, 32), "timestep": ("timestep", 1),
         "pooled_projections": (1, 16), "visual_rope_pos": ("list", [("tensor", [0]), ("tensor", [0, 1, 2, 3]),
                                                                        ("tensor", [0, 1, 2, 3])]),
         "text_rope_pos": ("tensor", list(range(8)))}),
    "StableCascadeUNet": (  # Stable Cascade's prior (stage C): CLIP text, pooled text and image conditioning
        {"in_channels": 4, "out_channels": 4, "conditioning_dim": 32, "block_out_channels": (32, 32),
         "num_attention_heads": (2, 2), "down_num_layers_per_block": (1, 1), "up_num_layers_per_block": (1, 1),
         "clip_image_in_channels": 16, "switch_level": (False,), "clip_text_in_channels": 16,
         "clip_text_pooled_in_channels": 16, "timestep_ratio_embedding_dim": 16},
        {"sample": (1, 4, 8, 8), "timestep_ratio": ("tensor", [0.5]), "clip_text_pooled": (1, 1, 16),
         "clip_text": (1, 8, 16), "clip_img": (1, 1, 16)}),
    "LuminaNextDiT2DModel": (  # the rotary table the pipeline builds for its 384 x 384 grid, random here
        {"sample_size": 16, "patch_size": 2, "in_channels": 4, "hidden_size": 24, "num_layers": 2,
         "num_attention_heads": 3, "num_kv_heads": 1, "multiple_of": 16, "ffn_dim_multiplier": None,
         "learn_sigma": False, "qk_norm": True, "cross_attention_dim": 32, "scaling_factor": 1.0},
        {"hidden_states": (1, 4, 16, 16), "encoder_hidden_states": (1, 16, 32), "timestep": ("tensor", [0.5]),
         "encoder_mask": ("tensor", [[1.0] * 16]), "image_rotary_emb": (384, 384, 4),
         "cross_attention_kwargs": ("value", {})}),
}
