"""The one config reader: a parser per family, and the dispatch spec_from_config goes through.

`parse(cfg)` reads a config whose `model_type` is one of PARSERS (the ten base families of
families/base.py, which give a plain ModelSpec, and FAMILY_PARSERS, the families since, which give a
FamilySpec with per-layer sums) or a multimodal wrapper (read through its `text_config`, the vision tower counted
apart). `--family NAME` (the `family`
argument) lets a user read an unknown `model_type` as a known family's shape; the spec says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.specs.families import base, dense, mla, moe, vision
from aiworkbook.specs.families.blocks import Config
from aiworkbook.specs.families.spec import FamilySpec, KVGroup
from aiworkbook.specs.model import ModelSpec

Parser = Callable[[Config, str, str], ModelSpec]

FAMILIES = tuple(base.PARSERS)  # the base families: every layer alike, a plain ModelSpec

# families with per-layer sums (FamilySpec)
FAMILY_PARSERS: dict[str, Callable[[Config, str, str], FamilySpec]] = {
    "qwen3": dense.qwen3,
    "qwen3_moe": moe.qwen_moe,
    "qwen2_moe": moe.qwen_moe,
    "gemma3_text": dense.gemma3_text,
    "deepseek_v2": mla.deepseek_v2,
    "deepseek_v3": mla.deepseek_v3,
    "gpt_oss": moe.gpt_oss,
    "llama4_text": moe.llama4_text,
    "olmo2": dense.olmo2,
    "granite": dense.llama_like,
    "phimoe": moe.phimoe,
    "phi": dense.phi,
    "smollm3": dense.llama_like,
    "starcoder2": dense.starcoder2,
}

PARSERS: dict[str, Parser] = {**base.PARSERS, **FAMILY_PARSERS}  # every family, the one registry

# Keys a wrapper's text_config may omit (the transformers config class's defaults).
TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262_208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131_072,
        "sliding_window": 4096,
    },
}

# wrapper model_type -> (text model_type when text_config omits it, vision counter(vision config,
# text hidden size, the wrapper's own config))
WRAPPERS: dict[str, tuple[str, Callable[[Config, int, dict[str, Any]], int]]] = {
    "gemma3": ("gemma3_text", lambda vc, ht, w: vision.siglip(vc) + vision.gemma3_projector(vc, ht)),
    "llama4": ("llama4_text", lambda vc, ht, w: vision.llama4(vc, ht)),
    "mistral3": ("mistral", vision.pixtral_mistral3),
    "kimi_vl": ("deepseek_v3", vision.moonvit_kimi_vl),
}

# transformers' default for the wrapper's tie_word_embeddings when its config omits the key
# (None: the text_config's own key decides, False when absent: Kimi-VL's language model is a
# DeepseekV3ForCausalLM built from its text_config, and its checkpoint keeps a separate lm_head)
WRAPPER_TIE: dict[str, bool | None] = {"gemma3": True, "llama4": False, "mistral3": True, "kimi_vl": None}

# attention implementations a wrapper's transformers model takes away from its text family's (Gemma 3's
# multimodal model sets _supports_flash_attn = False: flash attention drops the bidirectional image mask)
WRAPPER_DROPS_ATTENTION: dict[str, tuple[str, ...]] = {"gemma3": ("flash",)}

EXAMPLES: dict[str, str] = {
    "qwen3": "qwen3-8b",
    "qwen3_moe": "qwen3-30b-a3b",
    "qwen2_moe": "qwen1.5-moe-a2.7b",
    "gemma3": "gemma-3-4b-it",
    "gemma3_text": "gemma-3-1b-it",
    "deepseek_v2": "deepseek-v2-lite",
    "deepseek_v3": "deepseek-v3",
    "gpt_oss": "gpt-oss-20b",
    "llama4": "llama-4-scout-17b-16e",
    "llama4_text": "llama-4-scout-17b-16e",
    "mistral3": "mistral-small-3.1-24b",
    "olmo2": "olmo-2-1124-7b",
    "granite": "granite-3.3-8b-instruct",
    "phimoe": "phi-3.5-moe",
    "phi": "phi-2",
    "smollm3": "smollm3-3b",
    "starcoder2": "starcoder2-7b",
}


def known() -> tuple[str, ...]:
    """The families beyond the base ten (read as a FamilySpec), wrappers included."""
    return tuple(FAMILY_PARSERS) + tuple(WRAPPERS)


def names() -> tuple[str, ...]:
    """Every model_type aiworkbook reads: the base ten, then the rest."""
    return FAMILIES + known()


def parse(cfg: dict[str, Any], *, name: str, source: str) -> ModelSpec:
    mt = cfg.get("model_type")
    if mt in WRAPPERS:
        return _wrapper(cfg, mt, name=name, source=source)
    if mt not in PARSERS:
        raise SpecError("model_type", mt, ", ".join(names()), source=source)
    return PARSERS[mt](Config(cfg, source), mt, name)


def _wrapper(cfg: dict[str, Any], mt: str, *, name: str, source: str) -> FamilySpec:
    text_mt, counter = WRAPPERS[mt]
    tc = cfg.get("text_config")
    if not isinstance(tc, dict):
        raise SpecError(
            "text_config", tc, f"a JSON object (a {mt} wrapper reads its language model there)", source=source
        )
    text_mt = tc.get("model_type") or text_mt
    text = {
        **TEXT_DEFAULTS.get(text_mt, {}),
        **{k: v for k, v in tc.items() if v is not None},
        "model_type": text_mt,
    }
    # transformers ties by the wrapper's own key, whose default differs per wrapper (WRAPPER_TIE)
    own = WRAPPER_TIE[mt]
    text["tie_word_embeddings"] = cfg.get(
        "tie_word_embeddings", own if own is not None else bool(tc.get("tie_word_embeddings", False))
    )
    label = name or cfg.get("_name_or_path") or mt
    spec = _text_spec(text, text_mt, label, source)
    # the language model alone, tied by the text_config's key or its family's default (what an engine
    # that builds it from text_config, as vLLM does, loads)
    alone = {k: v for k, v in text.items() if k != "tie_word_embeddings" or "tie_word_embeddings" in tc}
    text_tie = _text_spec(alone, text_mt, label, source).tie_word_embeddings
    vc = cfg.get("vision_config")
    n_vision = counter(Config(vc, source), spec.hidden_size, cfg) if isinstance(vc, dict) else 0
    image: tuple[int, ...] = ()
    if mt == "gemma3" and isinstance(vc, dict):  # vllm gemma3_mm.py: one image_size^2 image, no pan-and-scan
        v = Config({**vision.SIGLIP_DEFAULTS, **{k: x for k, x in vc.items() if x is not None}}, source)
        tokens = Config(cfg, source).integer("mm_tokens_per_image", default=256)
        image = (v.integer("num_channels"), v.integer("image_size"), tokens)
    mech = spec.mechanisms
    if mech is not None and mt in WRAPPER_DROPS_ATTENTION:
        kept = tuple(a for a in mech.attentions if a not in WRAPPER_DROPS_ATTENTION[mt])
        mech = replace(mech, attentions=kept)
    return replace(
        spec,
        model_type=mt,
        vision_params=n_vision,
        text_tie_word_embeddings=text_tie,
        mm_dummy_image=image,
        mechanisms=mech,
    )


def _text_spec(text: dict[str, Any], text_mt: str, label: str, source: str) -> FamilySpec:
    if text_mt in FAMILY_PARSERS:
        return FAMILY_PARSERS[text_mt](Config(text, source), text_mt, label)
    # a base family (mistral3 wraps mistral): its parser and the config's own fields, grouped here
    from aiworkbook.specs.config_fields import with_config_fields
    from aiworkbook.specs.families.spec import from_base

    return from_base(with_config_fields(parse(text, name=label, source=source), text, source), text_mt)


__all__ = [
    "EXAMPLES",
    "FAMILIES",
    "PARSERS",
    "names",
    "FAMILY_PARSERS",
    "WRAPPERS",
    "FamilySpec",
    "KVGroup",
    "known",
    "parse",
]
