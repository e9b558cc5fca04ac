"""Observations in the loss (AutoCoA's SFT stage 3, a world model): which formats can say so, and how.

AutoCoA trains an agent in stages; stage 2 is chain-of-action SFT with the observations masked (every
export's default, `--observations mask`), stage 3 the same data with the observations trained too, so the
model also learns to predict the environment. `factory.mask.render(..., train_on_observations=True)` is the rule
(a tool turn's content; a user turn the row flags, through its end-of-turn marker; AFM observation spans),
and `--observations train` writes each format so that its trainer trains exactly that:

* `messages`: `weight` 1 on every observation that answers an action (formats.OBSERVATION: coa's tool
  turns, refine's DM lines, the world's refusal of a mistaken action included; the mistake keeps 0). axolotl
  reads the flag on any role (`message_field_training`), render under the switch.
* `openai`: `weight` 1 on every `tool` message (`weigh_observations`); axolotl reads it. verl's multi-turn
  SFT dataset and OpenAI's fine-tuning train assistant messages only: the card says so.
* `trl`: rendered with train_on_observations, so `assistant_masks` carry the observations.
* `afm`: the rows are the same (their `observation_spans` stay facts about the text); AFM's fork run with
  `ignore_observation: false`, or stock LLaMA-Factory reading them as alpaca, trains the whole output,
  observations included, as render does under the switch.
* `sharegpt`, `llamafactory`: refused. LLaMA-Factory trains only `gpt` / `function_call` turns, never a
  `human` or `observation` one, and drops any per-turn flag: an observation can train there only as a gpt
  turn, which is a different conversation (the model would learn to write it as its own turn).

Why a mistake's refusal trains: predicting the world includes predicting that it refuses a wrong action;
the mistaken action itself still never trains (it is not the agent's to learn).
"""

from __future__ import annotations

from typing import Any

TRAINABLE = ("messages", "openai", "trl", "afm")  # the formats that can carry `--observations train`
REFUSED = ("sharegpt", "llamafactory")


def observations_unavailable(name: str, observations: str) -> str | None:
    """Why format `name` cannot be written with `--observations <observations>` (one line), or None."""
    if observations != "train" or name not in REFUSED:
        return None
    return (
        f"--observations train: {name} cannot train observations (LLaMA-Factory trains only gpt and function_call "
        f"turns, never human or observation turns); use {', '.join(TRAINABLE)}"
    )


def world_model_rows(observations: str, written: list[str]) -> bool:
    """Whether an export trains observations: asked to, and one written format carries them."""
    return observations == "train" and any(name in TRAINABLE for name in written)


def untrained_note(observations: str, asked: list[str]) -> str | None:
    """The warning for `--observations train` beside formats none of which can carry it, else None."""
    if observations != "train" or world_model_rows(observations, asked):
        return None
    return f"--observations train: none of {', '.join(asked)} carries observations, so none trains ({', '.join(TRAINABLE)} do)"


def weigh_observations(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Native messages with `weight` on each tool message: 1, or 0 for a blank one (nothing to learn)."""
    for message in messages:
        if message["role"] == "tool":
            message["weight"] = int(bool((message.get("content") or "").strip()))
    return messages
