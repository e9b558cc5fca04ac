"""Per-episode counts and their roll-up (definitions: docs/eval.md).

- success: the script's goal holds when the episode ends.
- progress: 1 - remaining / initial, where both are shortest-plan lengths
  (`solvable.shortest_plan`) from the final and from the initial state; clipped
  to [0, 1]; 1.0 on success, 0.0 when the goal is out of reach from the end state.
- format errors: replies with no parseable `Action: name(k=v, ...)` line.
- invalid actions: parsed actions the world (or the action's validation code)
  rejects, by the refine path's error types (parameter / location / logic).
- repeated mistakes: a run of `loop_k` identical invalid replies in a row is one
  loop; a revisit is a (state, action) pair already tried in this episode.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

ERROR_TYPES = ("parameter", "location", "logic", "unknown_action")  # an action the environment does not have


@dataclass
class StepRecord:
    reply: str
    action: str | None  # the parsed call, None for a format error
    outcome: str  # "ok", "format", or an error type
    reason: str = ""


@dataclass
class MistakeTracker:
    """Counts repeated mistakes as they happen: identical invalid replies in a row, revisits."""

    loop_k: int = 3
    loops: int = 0
    revisits: int = 0
    longest_streak: int = 0
    _streak_key: str | None = None
    _streak: int = 0
    _seen: set = field(default_factory=set)

    def see(self, state_key: tuple, attempt: str, valid: bool) -> None:
        pair = (state_key, attempt)
        self.revisits += pair in self._seen
        self._seen.add(pair)
        if valid:
            self._streak_key, self._streak = None, 0
            return
        self._streak = self._streak + 1 if attempt == self._streak_key else 1
        self._streak_key = attempt
        self.longest_streak = max(self.longest_streak, self._streak)
        self.loops += self._streak == self.loop_k  # a streak counts once, when it reaches k


@dataclass
class EpisodeResult:
    env_id: str
    task: str
    status: str  # success | step_limit | player_error
    success: bool
    progress: float
    steps: int
    initial_distance: int
    final_distance: int | None  # None: the goal cannot be reached from the end state
    format_errors: int
    invalid_by_type: dict[str, int]
    loops: int
    revisits: int
    longest_mistake_streak: int
    error: str | None = None
    transcript: list[StepRecord] = field(default_factory=list)

    @property
    def invalid_actions(self) -> int:
        return sum(self.invalid_by_type.values())

    @property
    def loop_detected(self) -> bool:
        return self.loops > 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(invalid_actions=self.invalid_actions, loop_detected=self.loop_detected)
        return data


def progress_rate(initial: int, remaining: int | None) -> float:
    if remaining is None:
        return 0.0
    return min(1.0, max(0.0, 1.0 - remaining / initial))


def summarize(episodes: list[EpisodeResult]) -> dict[str, Any]:
    """Overall figures: rates are means over environments, counts are totals."""
    n = len(episodes)
    steps = sum(e.steps for e in episodes)
    by_type = Counter({t: 0 for t in ERROR_TYPES})
    for episode in episodes:
        by_type.update(episode.invalid_by_type)
    format_errors = sum(e.format_errors for e in episodes)
    return {
        "environments": n,
        "success_rate": _mean([e.success for e in episodes]),
        "progress_rate": _mean([e.progress for e in episodes]),
        "mean_steps": _mean([e.steps for e in episodes]),
        "steps": steps,
        "format_errors": format_errors,
        "format_error_rate": format_errors / steps if steps else 0.0,
        "invalid_actions": sum(by_type.values()),
        "invalid_by_type": dict(by_type),
        "loops": sum(e.loops for e in episodes),
        "loop_rate": _mean([e.loop_detected for e in episodes]),
        "revisits": sum(e.revisits for e in episodes),
        "player_errors": sum(e.status == "player_error" for e in episodes),
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
