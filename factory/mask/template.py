"""Chat-template text for a conversation prefix, fast.

`render` needs the template's text for every prefix of a conversation (about
two renders per turn). `tokenizer.apply_chat_template` spends most of its time
copying the whole conversation into plain types on every call, so a prefix
loop over it is quadratic; rendering the compiled template directly is several
times faster. The compiled template is a private transformers helper, so
`render` checks the fast text of the whole conversation against the public
`apply_chat_template` once per row and falls back to the public call alone when
they differ or the helper is missing.
"""

from __future__ import annotations

from typing import Callable

from .rows import RenderError

ChatText = Callable[[list[dict], bool], str]  # (messages, add_generation_prompt) -> text


def public_chat_text(tokenizer, tools: list[dict] | None = None) -> ChatText:
    def chat_text(messages: list[dict], add_generation_prompt: bool = False) -> str:
        return tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=add_generation_prompt
        )

    return _named_errors(chat_text)


def fast_chat_text(tokenizer, tools: list[dict] | None = None) -> ChatText | None:
    """The compiled template rendered the way apply_chat_template renders it, or None if unavailable."""
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template

        compiled = _compile_jinja_template(tokenizer.get_chat_template())
    except (ImportError, AttributeError, ValueError, TypeError):
        return None
    special = dict(tokenizer.special_tokens_map)

    def chat_text(messages: list[dict], add_generation_prompt: bool = False) -> str:
        return compiled.render(
            messages=messages, tools=tools, documents=None, add_generation_prompt=add_generation_prompt, **special
        )

    return _named_errors(chat_text)


def _named_errors(chat_text: ChatText) -> ChatText:
    """Template failures (a role it refuses, a raise_exception) become one-line RenderErrors."""

    def guarded(messages: list[dict], add_generation_prompt: bool = False) -> str:
        try:
            return chat_text(messages, add_generation_prompt)
        except RenderError:
            raise
        except Exception as exc:  # jinja raises many kinds; the template's message is what the user needs
            last = messages[-1]["role"] if messages else "none"
            raise RenderError(f"the chat template cannot render turn {len(messages) - 1} ({last}): {exc}") from None

    return guarded
