"""BabyAI (minigrid) as a text environment: the mission, the agent's view in words, seven text commands.

Success is BabyAI's own: the episode terminates with a positive reward. Progress
has no hand-annotated subgoals here (AgentBoard annotated its own BabyAI
subset): it is the distance closed towards the goal, measured with minigrid's
scripted BabyAI bot, which plays a copy of the current state to the end; the
steps it needs from the start are `initial`, from the current state `remaining`,
and progress is the best `1 - remaining / initial` the episode reached.
"""

from __future__ import annotations

import copy

from .babyai_view import describe_view
from .base import Measure, StepOutcome, normalize, progress_between

COMMANDS = {
    "turn left": "turn 90 degrees to the left",
    "turn right": "turn 90 degrees to the right",
    "move forward": "move one step in the direction you face",
    "pick up": "pick up the object right in front of you",
    "drop": "put down what you carry, right in front of you",
    "toggle": "open or close the door (or box) right in front of you",
    "done": "say that the task is done",
}
ALIASES = {"left": "turn left", "right": "turn right", "forward": "move forward", "pickup": "pick up"}
BOT_STEP_CAP = 300  # a bot that has not finished by then is stuck: the distance is unknown


class BabyAIEnv:
    def __init__(self, level: str, seed: int):
        self.level, self.seed = level, seed
        self.env_id = f"babyai:{level}:{seed}"
        self.task = ""
        self.actions_text = "\n".join(f"- {name}: {what}" for name, what in COMMANDS.items())
        self._env = None
        self._initial: int | None = None

    def reset(self) -> str:
        import gymnasium
        import minigrid  # noqa: F401  (registers the BabyAI levels)

        self._env = gymnasium.make(f"BabyAI-{self.level}-v0")
        obs, _ = self._env.reset(seed=self.seed)
        self.task = obs["mission"]
        self._initial = self._bot_distance()
        return describe_view(obs["image"], self._game.carrying)

    @property
    def _game(self):
        return self._env.unwrapped

    def resolve(self, text: str) -> str | None:
        command = ALIASES.get(normalize(text), normalize(text))
        return command if command in COMMANDS else None

    def available(self) -> str:
        return ", ".join(COMMANDS)

    def step(self, command: str) -> StepOutcome:
        before = self._snapshot()
        actions = self._game.actions
        action = {"turn left": actions.left, "turn right": actions.right, "move forward": actions.forward,
                  "pick up": actions.pickup, "drop": actions.drop, "toggle": actions.toggle,
                  "done": actions.done}[command]  # fmt: skip
        obs, reward, terminated, truncated, _ = self._env.step(action)
        note = _feedback(command, before, self._snapshot())
        view = describe_view(obs["image"], self._game.carrying)
        won = bool(terminated and reward > 0)
        return StepOutcome(f"{note} {view}".strip(), bool(terminated or truncated), won)

    def _snapshot(self) -> tuple:
        game = self._game
        front = game.grid.get(*game.front_pos)
        door = (front.type, getattr(front, "is_open", None)) if front is not None else None
        return tuple(int(v) for v in game.agent_pos), int(game.agent_dir), game.carrying, door

    def measure(self) -> Measure:
        remaining = self._bot_distance()
        return Measure(remaining, progress_between(self._initial, remaining))

    @property
    def initial_distance(self) -> int | None:
        return self._initial

    def _bot_distance(self) -> int | None:
        """Steps minigrid's BabyAI bot needs to finish the mission from a copy of the current state."""
        from minigrid.utils.baby_ai_bot import BabyAIBot

        game = copy.deepcopy(self._game)
        game.max_steps = game.step_count + BOT_STEP_CAP + 1  # the copy must not time out before the bot
        try:
            bot = BabyAIBot(game)
            for n in range(1, BOT_STEP_CAP + 1):
                _, reward, terminated, truncated, _ = game.step(bot.replan())
                if terminated:
                    return n if reward > 0 else None
                if truncated:
                    return None
        except (AssertionError, TypeError, ValueError, IndexError, AttributeError):
            return None  # the bot cannot plan from this state (it was written for fresh episodes)
        return None

    def state_key(self) -> tuple:
        pos, direction, carrying, door = self._snapshot()
        return pos, direction, carrying and (carrying.type, carrying.color), door

    def close(self) -> None:
        if self._env is not None:
            self._env.close()


def _feedback(command: str, before: tuple, after: tuple) -> str:
    """What the command did, in words, when the view alone would not say it."""
    if command == "move forward" and before[0] == after[0]:
        return "You cannot move forward: something blocks the way."
    if command == "pick up":
        return "You picked it up." if after[2] is not None and before[2] is None else "Nothing was picked up."
    if command == "drop":
        return "You put it down." if before[2] is not None and after[2] is None else "You cannot drop anything here."
    if command == "toggle" and before[3] == after[3]:
        return "Nothing happens."  # a change shows in the view (the door's new state)
    return ""
