"""How long the written pairs are, for the dataset card: the longest prompt + side, and the words of each side.

Two figures a trainer's settings depend on, noted while the rows stream out (preference.pair_writer):

- `longest_chars`: the longest prompt + side in characters; LLaMA-Factory cuts a longer pair at
  `cutoff_len` (the card's advice);
- `side_words`: the mean words of the chosen and of the rejected sides the format wrote, and the share of
  pairs (both sides written) whose chosen side has fewer words. DPO sums log-probabilities over a side's
  tokens, so a length gap between the sides is learnt as part of the preference, and the SFT term imitates
  the chosen sides as written. The refine pairs have one: a correction's reaction sentences are cut from
  the chosen side (pairs_thought.py), while a mistake keeps its whole justification. The card states the
  figures with the length-aware loss settings each trainer has (preference_consumers.py).

A `kto` row is one side: its completion counts for the side its label says, and a pair's two rows (written
one after the other) make one pair of the share.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class SideWords:
    """Running word counts of the sides a format wrote (every split of one export)."""

    words: Counter = field(default_factory=Counter)  # side ("chosen" / "rejected") -> words
    sides: Counter = field(default_factory=Counter)  # side -> sides written
    pairs: int = 0  # pairs with both sides written
    chosen_shorter: int = 0

    def note(self, words: dict[str, int]) -> None:
        """One pair's written sides: side name -> words."""
        self.words.update(words)
        self.sides.update(words.keys())
        if len(words) == 2:
            self.pairs += 1
            self.chosen_shorter += words["chosen"] < words["rejected"]

    def figures(self) -> dict[str, Any]:
        """settings["side_words"]: mean words per side (None without such a side), the share of pairs whose
        chosen side is shorter, and how many pairs that share is of."""
        mean = {
            side: round(self.words[side] / self.sides[side], 1) if self.sides[side] else None
            for side in ("chosen", "rejected")
        }
        shorter = round(self.chosen_shorter / self.pairs, 2) if self.pairs else None
        return {"chosen_mean": mean["chosen"], "rejected_mean": mean["rejected"], "chosen_shorter": shorter,
                "pairs": self.pairs}  # fmt: skip


def measured(rows: Iterator[dict[str, Any]], settings: dict, tally: SideWords) -> Iterator[dict[str, Any]]:
    """Pass rows through, noting the longest prompt + side and each pair's side words in `settings`."""
    pair_id, words = None, {}
    for row in rows:
        note_longest(row, settings)
        if row["pair_id"] != pair_id:
            tally.note(words)
            pair_id, words = row["pair_id"], {}
        words.update(side_words(row))
        yield row
    tally.note(words)
    settings["side_words"] = tally.figures()


def side_words(row: dict[str, Any]) -> dict[str, int]:
    """The words of the sides one row holds: both for `preference` / `ranking`, its label's for `kto`."""
    if "label" in row:
        return {"chosen" if row["label"] else "rejected": words(row["completion"])}
    return {side: words(row[side]) for side in ("chosen", "rejected")}


def words(side: Any) -> int:
    return sum(len(text(message).split()) for message in as_list(side))


def note_longest(row: dict[str, Any], settings: dict) -> None:
    """The longest prompt + side in characters (the card's cutoff_len advice)."""
    prompt = sum(len(text(m)) for m in row.get("prompt") or row.get("conversations") or [])
    sides = [sum(len(text(m)) for m in as_list(row[k])) for k in ("chosen", "rejected", "completion") if row.get(k)]
    settings["longest_chars"] = max(settings.get("longest_chars", 0), prompt + max(sides, default=0))


def as_list(side: Any) -> list:
    return side if isinstance(side, list) else [side]


def text(message: dict[str, str]) -> str:
    return message.get("content") or message.get("value") or ""
