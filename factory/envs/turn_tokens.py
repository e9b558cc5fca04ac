"""The tokens of a player's turn: the generated tokens, cut where the text game cuts the reply.

Why: a policy may go on past its turn (invent the DM's `Observation:`, write a second Thought or Action).
The game reads only the turn (text_game.turn_end); the tokens that train must be exactly that turn, or
the policy gets gradient on words the world never answered and the rollout's messages no longer match
the trained tokens. A cut falls in the text, not always at a token boundary: the kept tokens are those
whose text lies inside the turn, plus the one token that straddles its end when all it adds beyond the
turn is whitespace (ChatML tokenizers write `)\\n` as one token: dropping it would drop the action's
closing parenthesis). The turn's message is the text of the kept tokens, exactly, so factory.mask.render
re-renders the same tokens. A cut turn did not end itself: `end_of_turn_ids` is what the chat template
writes after an assistant turn, which the verl loop appends untrained (verl_agent.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .text_game import turn_end

_PROBE = "END_OF_TURN_PROBE"  # an assistant text whose end the chat template's suffix follows


@dataclass(frozen=True)
class TurnTokens:
    token_ids: list[int]  # the generated tokens of the turn
    text: str  # their text (special tokens skipped): what the game reads and the rollout's message holds
    cut: bool  # the reply went on past its turn: the tokens after it were dropped


def decode(tokenizer: Any, token_ids: Sequence[int]) -> str:
    return tokenizer.decode(list(token_ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)


def turn_tokens(tokenizer: Any, token_ids: Sequence[int]) -> TurnTokens:
    """The leading tokens of a generation that make up the player's turn, and their text."""
    full = decode(tokenizer, token_ids)
    end = turn_end(full)
    if not full[end:].strip():
        return TurnTokens(list(token_ids), full, False)
    kept = list(token_ids[: _tokens_within(tokenizer, token_ids, full[:end])])
    return TurnTokens(kept, decode(tokenizer, kept), True)


def _tokens_within(tokenizer: Any, token_ids: Sequence[int], turn: str) -> int:
    """How many leading tokens lie inside `turn` (a prefix of their text), plus a straddling whitespace tail."""

    def prefix(count: int) -> str:  # a token ending inside a multi-byte character decodes to U+FFFD
        return decode(tokenizer, token_ids[:count]).rstrip("\ufffd")

    low, high = 0, len(token_ids)
    while low < high:  # the text of the first n tokens grows with n: the largest n inside the turn
        middle = (low + high + 1) // 2
        low, high = (middle, high) if turn.startswith(prefix(middle)) else (low, middle - 1)
    if low < len(token_ids) and prefix(low) != turn:
        longer = prefix(low + 1)
        if longer.startswith(turn) and not longer[len(turn) :].strip():
            low += 1
    return low


def end_of_turn_ids(tokenizer: Any) -> list[int]:
    """What the chat template writes after an assistant turn's text up to the next turn (ChatML: `<|im_end|>\\n`)."""
    messages = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _PROBE}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    return tokenizer.encode(text[text.rindex(_PROBE) + len(_PROBE) :], add_special_tokens=False)
