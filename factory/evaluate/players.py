"""Players: anything with `name` and `async def act(messages) -> str`.

- `HFPlayer`: a local transformers checkpoint (chat template, `generate`, greedy
  unless a temperature is set). Concurrent episodes are batched into one
  left-padded `generate` call, since one forward over a batch costs about what
  one prompt costs on a GPU.
- `LLMPlayer`: everything else through `factory.llm` (DESIGN rule 1): an API
  model, any OpenAI-compatible base URL, or a GGUF on the embedded llama.cpp
  server ("local:/path.gguf"). Plain-text completions, logged in the run store.

torch and transformers are imported only when an HFPlayer is built.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from factory.errors import FactoryError, require_train_extra
from factory.llm import LLMClient, LLMConfig
from factory.store import Store


class PlayerError(Exception):
    """No reply could be had (a failed request, a prompt past the context): the episode ends."""


class Player(Protocol):
    name: str

    # `tools`: JSON-schema functions the player may call natively (`factory eval --tool-calls native`).
    async def act(self, messages: list[dict[str, Any]], tools: list[dict] | None = None) -> str: ...


class LLMPlayer:
    def __init__(self, config: LLMConfig, store: Store | None = None, run_id: str | None = None):
        # A reply cut at max_tokens is still the player's turn (as with HF generate): no longer re-asks.
        self.config = config = config.model_copy(update={"max_parse_retries": 0})
        self.client = LLMClient(config, store, run_id)
        self.name = config.model if not config.model.startswith("local:") else f"gguf:{Path(config.model[6:]).name}"
        self.settings = {"temperature": config.temperature, "max_tokens": config.max_tokens}

    async def act(self, messages: list[dict[str, Any]], tools: list[dict] | None = None) -> str:
        """The reply as text; with `tools`, they go in the request, and calls the server parsed come back as
        Hermes-style text (llm/transport.py), so the loop reads a call whichever side parsed it."""
        result = await self.client.complete(messages, stage="eval", **({"tools": tools} if tools else {}))
        if not result.ok and not (result.error_kind == "length" and result.text):
            raise PlayerError(f"{result.error_kind}: {result.error}")
        return result.text or ""

    async def close(self) -> None:
        await self.client.close()


def llm_config(model: str, base_url: str | None = None, max_new_tokens: int = 256, temperature: float = 0.0,
               concurrency: int = 8, **overrides: Any) -> LLMConfig:  # fmt: skip
    """An LLMConfig for a player: greedy by default, replies no longer than a ReAct turn needs.

    The call cache is off: one model name at one URL may serve a new checkpoint next time,
    and a cached reply would then score the old one. Every call is still logged."""
    values = {"model": model, "base_url": base_url, "max_tokens": max_new_tokens, "temperature": temperature,
              "concurrency": concurrency, "cache": False, **overrides}  # fmt: skip
    return LLMConfig(**values)


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-shaped messages as chat templates take them: a call's `arguments` a dict, not JSON text."""
    from factory.mask.rows import template_tool_calls

    return [
        {**m, "tool_calls": list(template_tool_calls(m["tool_calls"], "tool_calls"))} if m.get("tool_calls") else m
        for m in messages
    ]


class HFPlayer:
    def __init__(self, model: Any, tokenizer: Any, name: str = "hf", max_new_tokens: int = 256,
                 temperature: float = 0.0, batch_size: int = 8):  # fmt: skip
        if not getattr(tokenizer, "chat_template", None):
            raise FactoryError(f"{name}: the tokenizer has no chat template; save the one used in training with it")
        if tokenizer.pad_token_id is None:  # batches are left-padded; any token works under the attention mask
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer, self.name = model.eval(), tokenizer, name
        self.max_new_tokens, self.temperature, self.batch_size = max_new_tokens, temperature, batch_size
        self.settings = {"temperature": temperature, "max_new_tokens": max_new_tokens, "batch_size": batch_size}
        self._pending: list[tuple[tuple[list[dict], list[dict] | None], asyncio.Future]] = []
        self._worker: asyncio.Task | None = None

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | None = None, **kwargs: Any) -> "HFPlayer":
        """A saved checkpoint folder (model + tokenizer), or a PEFT adapter folder over a local base."""
        path = Path(path)
        if not (path / "config.json").exists() and not (path / "adapter_config.json").exists():
            raise FactoryError(f"{path}: not a transformers checkpoint (no config.json or adapter_config.json)")
        require_train_extra("factory eval with a local checkpoint")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            if (path / "adapter_config.json").exists():
                from peft import AutoPeftModelForCausalLM

                model = AutoPeftModelForCausalLM.from_pretrained(path, dtype="auto")
            else:
                model = AutoModelForCausalLM.from_pretrained(path, dtype="auto")
        except (OSError, ValueError) as exc:
            raise FactoryError(f"{path}: cannot load the checkpoint ({str(exc).splitlines()[0]})") from None
        return cls(model.to(device), tokenizer, name=str(path), **kwargs)

    async def act(self, messages: list[dict[str, Any]], tools: list[dict] | None = None) -> str:
        future = asyncio.get_running_loop().create_future()
        self._pending.append(((messages, tools), future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(0.01)  # let the other episodes' turns join this batch
            batch, self._pending = self._pending[: self.batch_size], self._pending[self.batch_size :]
            try:
                replies = await asyncio.to_thread(self._generate, [messages for messages, _ in batch])
            except Exception as exc:  # a bug or an OOM must end these episodes, not hang them
                replies = [PlayerError(f"generate failed: {type(exc).__name__}: {exc}")] * len(batch)
            for (_, future), reply in zip(batch, replies):
                if future.done():  # its episode was cancelled meanwhile
                    continue
                if isinstance(reply, Exception):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)

    def _generate(self, conversations: list[tuple[list[dict], list[dict] | None]]) -> list[str | PlayerError]:
        prompts = [
            self.tokenizer.apply_chat_template(
                template_messages(c), tools=tools, tokenize=False, add_generation_prompt=True
            )
            for c, tools in conversations
        ]
        limit = getattr(self.model.config, "max_position_embeddings", None)
        lengths = [len(self.tokenizer(p, add_special_tokens=False).input_ids) for p in prompts]
        fits = [limit is None or n + self.max_new_tokens <= limit for n in lengths]
        texts = self._generate_texts([p for p, ok in zip(prompts, fits) if ok]) if any(fits) else []
        too_long = "context_length: {} prompt tokens + {} new > {} positions"
        return [
            texts.pop(0) if ok else PlayerError(too_long.format(n, self.max_new_tokens, limit))
            for n, ok in zip(lengths, fits)
        ]

    def _generate_texts(self, prompts: list[str]) -> list[str]:
        import torch

        self.tokenizer.padding_side = "left"  # generation continues from the right end of every row
        batch = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = batch.to(self.model.device)
        sampling = (
            {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
        )
        pad = self.tokenizer.pad_token_id
        with torch.inference_mode():
            output = self.model.generate(**batch, max_new_tokens=self.max_new_tokens, pad_token_id=pad, **sampling)
        return self.tokenizer.batch_decode(output[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
