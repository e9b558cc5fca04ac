"""The model side of SFT: tokenizer, model (local folder or tiny random), LoRA, precision, attention kernel."""

from __future__ import annotations

import importlib.util

import torch

from factory.errors import ConfigError, FactoryError
from factory.mask.tokenizer import TINY_PREFIX, check_reachable, first_line, tokenizer_by_name
from train.config import LoraSection, ModelSection, SFTConfig


def resolve_bf16(setting: bool | str) -> bool:
    supported = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if setting is True and not supported:
        raise ConfigError("bf16: true, but this device has no bf16 support (set bf16: auto or false)")
    return supported if setting == "auto" else bool(setting)


def resolve_attention(setting: str) -> str:
    has_flash = torch.cuda.is_available() and importlib.util.find_spec("flash_attn") is not None
    if setting == "flash_attention_2" and not has_flash:
        raise ConfigError("model.attn_implementation: flash_attention_2 needs CUDA and the flash-attn package")
    if setting == "auto":
        return "flash_attention_2" if has_flash else "sdpa"
    return setting


def load_tokenizer(section: ModelSection):
    tokenizer = tokenizer_by_name(section.tokenizer or section.path, "model.tokenizer")
    if tokenizer.pad_token_id is None:  # padding is never trained or attended; any id will do
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def build_model(config: SFTConfig, tokenizer, attn: str):
    model = load_model(config.model, tokenizer, attn, config.seed)
    if config.gradient_checkpointing:
        enable_checkpointing(model)
    model.config.use_cache = False
    if config.lora.enabled:
        model = with_lora(model, config.lora)
    return model


def load_model(section: ModelSection, tokenizer, attn: str, seed: int):
    if section.path.startswith(TINY_PREFIX):
        from factory.mask.tiny import tiny_model

        arch = section.path[len(TINY_PREFIX) :]
        if arch not in ("qwen2", "llama"):
            raise ConfigError(f"model.path: unknown tiny model '{section.path}' (use tiny:qwen2 or tiny:llama)")
        model = tiny_model(tokenizer, arch, hidden=section.tiny_hidden, layers=section.tiny_layers, seed=seed)
        model.set_attn_implementation(attn)
        return model
    from transformers import AutoModelForCausalLM

    check_reachable(section.path, "model.path")
    try:
        # fp32 master weights; bf16 compute comes from accelerate's autocast.
        return AutoModelForCausalLM.from_pretrained(section.path, attn_implementation=attn, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise FactoryError(f"model.path: cannot load '{section.path}' ({first_line(exc)})") from None


def enable_checkpointing(model) -> None:
    # Non-reentrant: works with frozen inputs (LoRA) and without enable_input_require_grads.
    # transformers 5 renamed gradient_checkpointing_enable (kept as a deprecated alias) to activation_...
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def with_lora(model, section: LoraSection):
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=section.r,
        lora_alpha=section.alpha,
        lora_dropout=section.dropout,
        target_modules=section.target_modules,
        task_type="CAUSAL_LM",
    )
    try:
        return get_peft_model(model, lora)
    except ValueError as exc:
        raise ConfigError(f"lora.target_modules: {first_line(exc)}") from None
