"""Vision towers of multimodal wrappers, counted apart from the language model they feed.

SigLIP (Gemma 3's tower): a patch convolution with bias, a learned position table, pre-norm encoder
layers (biased q/k/v/out, two LayerNorms, a biased two-layer MLP), a post LayerNorm and, when
`vision_use_head`, the attention-pooling head. Gemma 3's projector adds a soft-embedding RMSNorm and
a vision x text projection matrix. Kimi-VL's MoonViT and projector: see `moonvit_kimi_vl`.
"""

from __future__ import annotations

from typing import Any

from aiworkbook.specs.families.blocks import Config

SIGLIP_DEFAULTS = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
}


def siglip(vc: Config) -> int:
    g = {**SIGLIP_DEFAULTS, **{k: v for k, v in vc.cfg.items() if v is not None}}
    c = Config(g, vc.source)
    hv, iv = c.integer("hidden_size"), c.integer("intermediate_size")
    p, ch = c.integer("patch_size"), c.integer("num_channels")
    patches = (c.integer("image_size") // p) ** 2
    embed = ch * p * p * hv + hv + patches * hv
    layer = 4 * (hv * hv + hv) + 2 * 2 * hv + (hv * iv + iv) + (iv * hv + hv)
    n = embed + c.integer("num_hidden_layers") * layer + 2 * hv
    if c.flag("vision_use_head", True):
        # probe, nn.MultiheadAttention (in_proj 3h x h + 3h, out_proj h x h + h), LayerNorm, MLP
        n += hv + (3 * hv * hv + 3 * hv) + (hv * hv + hv) + 2 * hv + (hv * iv + iv) + (iv * hv + hv)
    return n


def gemma3_projector(vc: Config, text_hidden: int) -> int:
    hv: int = {**SIGLIP_DEFAULTS, **vc.cfg}["hidden_size"]
    return hv * text_hidden + hv


def llama4(vc: Config, text_hidden: int) -> int:
    """Llama 4's tower: unfold-linear patches, class token, position table, biased pre-norm encoder
    layers, pre/post LayerNorms, the pixel-shuffle adapter MLP; then the projector into the text width."""
    hv, iv = vc.integer("hidden_size", default=768), vc.integer("intermediate_size", default=5632)
    p, ch, img = (
        vc.integer("patch_size", default=14),
        vc.integer("num_channels", default=3),
        vc.integer("image_size", default=448),
    )
    ratio = vc.cfg.get("pixel_shuffle_ratio", 0.5)
    pin, pout = (
        vc.integer("projector_input_dim", default=4096),
        vc.integer("projector_output_dim", default=4096),
    )
    bias = vc.flag("multi_modal_projector_bias", False)
    embed = hv + ((img // p) ** 2 + 1) * hv + ch * p * p * hv + 4 * hv
    layer = 4 * (hv * hv + hv) + (hv * iv + iv) + (iv * hv + hv) + 4 * hv
    adapter = int(hv / ratio**2) * pin + pin * pout + ((pin + pout) if bias else 0)
    projector = vc.integer("vision_output_dim", default=pout) * text_hidden
    return embed + vc.integer("num_hidden_layers", default=34) * layer + adapter + projector


PIXTRAL_DEFAULTS = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_channels": 3,
    "patch_size": 16,
}


def pixtral_mistral3(vc: Config, text_hidden: int, wrapper: dict[str, Any]) -> int:
    """Mistral 3's Pixtral tower (bias-free patch conv, RMSNorms, gated MLPs) and its projector
    (RMSNorm, the spatial patch merger, two linears into the text width)."""
    c = Config({**PIXTRAL_DEFAULTS, **{k: v for k, v in vc.cfg.items() if v is not None}}, vc.source)
    hv, iv, p = c.integer("hidden_size"), c.integer("intermediate_size"), c.integer("patch_size")
    layer = 4 * hv * hv + 3 * hv * iv + 2 * hv
    tower = c.integer("num_channels") * p * p * hv + hv + c.integer("num_hidden_layers") * layer
    merge = int(wrapper.get("spatial_merge_size") or 2)
    bias = bool(wrapper.get("multimodal_projector_bias", False))
    proj = hv + hv * hv * merge * merge + hv * text_hidden + text_hidden * text_hidden
    return tower + proj + (2 * text_hidden if bias else 0)


MOONVIT_DEFAULTS = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_hidden_layers": 27,
    "patch_size": 14,
    "init_pos_emb_height": 64,
    "init_pos_emb_width": 64,
    "merge_kernel_size": [2, 2],
}


def moonvit_kimi_vl(vc: Config, text_hidden: int, wrapper: dict[str, Any]) -> int:
    """Kimi-VL's MoonViT tower and projector, from the published modeling_kimi_vl.py (restated in
    vLLM's models/moonvit.py and NVIDIA-NeMo/Automodel's kimivl/model.py; transformers has no kimi_vl):
    a biased 3-channel patch conv, a learned height x width x hidden position table, layers of two
    LayerNorms, a biased fused wqkv (3h) and wo, a biased two-layer GELU MLP, a final LayerNorm; the
    projector: a LayerNorm over the vision width, then linear_1 (h*kh*kw square, biased) and linear_2
    into the text width (biased), after merging kh x kw patches."""
    c = Config({**MOONVIT_DEFAULTS, **{k: v for k, v in vc.cfg.items() if v is not None}}, vc.source)
    hv, iv, p = c.integer("hidden_size"), c.integer("intermediate_size"), c.integer("patch_size")
    table = c.integer("init_pos_emb_height") * c.integer("init_pos_emb_width") * hv
    layer = 2 * 2 * hv + (hv * 3 * hv + 3 * hv) + (hv * hv + hv) + (hv * iv + iv) + (iv * hv + hv)
    tower = 3 * p * p * hv + hv + table + c.integer("num_hidden_layers") * layer + 2 * hv
    merge = c.cfg["merge_kernel_size"]
    if not (
        isinstance(merge, (list, tuple))
        and len(merge) == 2
        and all(isinstance(k, int) and k > 0 for k in merge)
    ):
        from aiworkbook.errors import SpecError

        raise SpecError("merge_kernel_size", merge, "two positive integers [kh, kw]", source=vc.source)
    m: int = hv * merge[0] * merge[1]
    return tower + 2 * hv + (m * m + m) + (m * text_hidden + text_hidden)
