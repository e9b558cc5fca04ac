"""Grounded thoughts (issue 26): a trained thought may not assert a world state the player never saw.

A trained refine thought ("His vitals are stable", after "You check the vitals.") teaches a student to
state what it has not observed. `check_thoughts(script, turns, steps)` reads every trained assistant turn
(loss true; the thought is the text before `Action:`) and finds its *state assertions about the script's
own things*: items, places and the subjects of named facts, by their names (`safety_harness`, "safety
harness", or the head noun "harness"). Everything else in a thought is left alone, so a false positive
needs a sentence that names a thing of this world and states something about it. Four shapes count:

- the player's place:      "I'm (still) in the barn"           -> the replayed location
- what the player holds:   "I have the key", "I have no wood"  -> the replayed inventory
- where an item lies:      "the key is in the shed / here"     -> the replayed items of that place
- a state of a thing:      "the vitals are stable", "the door is not locked"

The first three are judged by the script's world at that turn (world.step over the row's stored steps,
accepted moves only): true there, or said together in what the player read (the task and every
observation before the turn), is grounded. A state is judged by the world when a fact of that thing
names the same state (`panels_mounted` for "the panels are mounted": its truth decides); otherwise the
state's word (its stem: "stack" for "stacked") must occur in what the player read. A clause that plans,
intends or guesses ("I'll", "let me", "need", "might", "should", "if", a question...) asserts nothing and
is skipped, and so is a pronoun subject ("it's ready"): no coreference, no guess.

A plan does say one thing: the move it makes now. A trained thought that names its own action's verb
with only other things ("I am going to take the laptop" over `take(item=textbook)`) clashes with that
action (thought_actions.py); its turn counts among the row's `ungrounded_thoughts` too, so the
`grounded_thoughts` filter drops the row, the clash as its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .mentions import name_forms, name_pattern
from .narration import display
from .prose import PARTICLES, STATES, _participle
from .script import Script
from .thought_actions import clashes
from .world import WorldState
from .world import step as world_step

HEDGE = re.compile(
    r"\?|\b(i'll|i'd|will|won't|let me|let's|going to|gonna|need|needs|should|must|might|may|maybe|perhaps|"
    r"probably|could|would|can|if|want|wants|hope|think|guess|expect|assume|suppose|likely|unless|until|whether|"
    r"try|plan|once|when)\b"
)
# A comma before a new subject starts a clause of its own ("i am in the kitchen, i can walk on"): read as one,
# the hedge of the second ("can") hid the claim of the first.
CLAUSES = re.compile(
    r"[.;:!?]+\s*|,\s*(?=(?:but|so|and|then|because|i|i'm|i've|you|we|he|she|they|it|it's)\b)|"
    r"\s+(?:but|so|because)\s+|\s+-+\s+"
)
BE = (
    r"(?:is|are|was|were|'s|'re|has been|have been|had been|is not|are not|isn't|aren't|wasn't|weren't|"
    r"has not been|have not been|hasn't been|haven't been|no longer)"
)
ADVERBS = r"(?:\s+(?:now|already|still|all|both|even|not|no longer|yet|finally|fully|safely|right|just|also))*"
NEGATION = re.compile(r"\bnot\b|n't\b|\bno longer\b")
LOCATIVE = {"in", "at", "on", "inside", "by", "under", "near", "here", "there", "beside", "behind"}
HELD = re.compile(r"^(?:in (?:my|your) (?:hands?|bag|pocket|arms)|with me|in hand|on me)\b")
PLAYER_AT = re.compile(r"\bi(?:'m| am)((?:\s+(?:still|now|already|back|right|not))*)\s+(?:in|at|on|inside)\s+(.+)")
PLAYER_HAS = re.compile(
    r"\bi((?:\s+(?:already|still|now|do not|don't))*)\s+(?:have got|'ve got|have|hold|carry|'m holding|am holding|"
    r"'m carrying|am carrying)\b(?!\s+to\b)(.*)"
)
PRONOUNS = {"it", "they", "that", "this", "these", "those", "he", "she", "everything", "all"}


@dataclass
class Finding:
    turn: int  # the assistant turn, 1-based
    thought: str
    claim: str  # the clause, as written
    reason: str

    def text(self) -> str:
        return f"'{self.claim[:100]}' (turn {self.turn}): {self.reason}"


@dataclass
class ThoughtCheck:
    trained: int = 0  # trained thoughts read
    assertions: int = 0  # state assertions found in them
    ungrounded: list[Finding] = field(default_factory=list)  # the assertions no observation or world state supports
    clashes: list[Finding] = field(default_factory=list)  # sentences naming another move than the turn's action

    @property
    def ungrounded_thoughts(self) -> int:
        """Trained thoughts with an ungrounded assertion or a clash with their own action."""
        return len({f.turn for f in self.ungrounded + self.clashes})

    def stats(self) -> dict[str, Any]:
        """The fields a row's stats record (records.TrajectoryStats)."""
        found = sorted(self.ungrounded + self.clashes, key=lambda f: f.turn)
        first = found[0].text() if found else None
        return {"state_assertions": self.assertions, "ungrounded_assertions": len(self.ungrounded),
                "ungrounded_thoughts": self.ungrounded_thoughts, "ungrounded_thought": first}  # fmt: skip


class World:
    """The script's names as patterns, for finding mentions of its things in text."""

    def __init__(self, script: Script):
        self.script = script
        env = script.environment
        self.items = list(dict.fromkeys([i for loc in env.locations for i in loc.items] + env.player.inventory))
        self.places = [loc.name for loc in env.locations]
        self.facts = {}  # fact name -> (subject words, state words)
        for fact in script.fact_names():
            words = display(fact).lower().split()
            tail = 2 if len(words) > 2 and words[-1] in PARTICLES else 1
            if len(words) > tail:
                self.facts[fact] = (words[:-tail], words[-tail:])
        self.subjects = {" ".join(s): fact for fact, (s, _) in self.facts.items()}
        names = self.items + self.places + list(self.subjects)
        forms = [name_forms(name.replace(" ", "_")) for name in names]
        self.things: dict[str, str] = {}
        for depth in range(3):  # every full name before any head noun: "panels" is the item's, not the fact's
            for name, written in zip(names, forms):
                if depth < len(written):
                    self.things.setdefault(written[depth], name)
        self.pattern = name_pattern(self.things)

    def mention(self, text: str, kinds: list[str]) -> str | None:
        """The first thing of these kinds ("item", "place") that `text` starts with (after a determiner)."""
        found = re.match(r"(?:(?:the|my|his|her|your|their|our|a|an|some)\s+)?" + self.pattern, text)
        name = self.things.get(found.group(1)) if found else None
        pools = {"item": self.items, "place": self.places}
        return name if name is not None and any(name in pools[k] for k in kinds) else None

    def mentions(self, text: str, kinds: list[str]) -> list[str]:
        pools = [n for k in kinds for n in {"item": self.items, "place": self.places}[k]]
        return [self.things[m] for m in re.findall(self.pattern, text) if self.things[m] in pools]


def _stems(word: str) -> list[str]:
    """The stems a state word may show as in text: "stacked" -> stack; "wired" -> wire; "napping" -> nap."""
    stems = [word]
    if word.endswith("ed"):
        stems += [word[:-2], word[:-1], word[:-3] if len(word) > 4 and word[-3] == word[-4] else word[:-2]]
    elif word.endswith("ing"):
        stems += [word[:-3], word[:-3] + "e", word[:-4] if len(word) > 5 and word[-4] == word[-5] else word[:-3]]
    return [s for s in dict.fromkeys(stems) if len(s) >= 3]


def _read(text: str, words: list[str]) -> bool:
    return any(re.search(r"\b" + re.escape(w), text) for w in words)


def _together(seen: list[str], a: str, b: str) -> bool:
    """Whether one sentence the player read names both (any of their forms)."""
    pa, pb = name_pattern(name_forms(a)), name_pattern(name_forms(b))
    return any(re.search(pa, s) and re.search(pb, s) for text in seen for s in re.split(r"(?<=[.!?])\s+", text))


def _clauses(thought: str) -> list[str]:
    text = thought.replace("\u2019", "'").lower()
    return [c.strip() for c in CLAUSES.split(text) if c and c.strip() and not HEDGE.search(c)]


def _judge_clause(world: World, clause: str, state: WorldState, seen: list[str]) -> list[tuple[bool, str]]:
    """(grounded, reason) for each state assertion in one clause."""
    out: list[tuple[bool, str]] = []
    read = " ".join(seen)
    at = PLAYER_AT.search(clause)
    place = world.mention(at.group(2), ["place"]) if at else None
    if place:
        truth = (state.location == place) != ("not" in at.group(1))
        out.append((truth, f"the player is in {display(state.location)}"))
    has = PLAYER_HAS.search(clause)
    held = list(dict.fromkeys(world.mentions(has.group(2), ["item"]))) if has else []
    if held:
        negated = bool(NEGATION.search(has.group(1))) or bool(re.match(r"\s*(no|nothing)\b", has.group(2)))
        wrong = [item for item in held if (item in state.inventory) == negated]
        what = "holds" if wrong and wrong[0] in state.inventory else "does not hold"
        out.append((not wrong, f"the player {what} {display(wrong[0])}" if wrong else ""))
    for found in re.finditer(world.pattern, clause):
        after = re.match(r"\s+(" + BE + r")(" + ADVERBS + r")\s+([a-z-]+)(.*)", clause[found.end() :])
        if not after:
            continue
        thing, negated = world.things[found.group(1)], bool(NEGATION.search(after.group(1) + after.group(2)))
        word, rest = after.group(3), after.group(4).strip()
        out += _judge_thing(world, thing, negated, word, rest, state, seen, read)
    return out


def _judge_thing(
    world: World, thing: str, negated: bool, word: str, rest: str, state: WorldState, seen: list[str], read: str
) -> list[tuple[bool, str]]:
    if word in LOCATIVE and (word in ("here", "there") or rest):
        if thing not in world.items:
            return []
        where = f"{word} {rest}".strip()
        if HELD.match(where):
            held = thing in state.inventory
            return [(held != negated or _together(seen, thing, "hand"), f"the player does not hold {display(thing)}")]
        place = state.location if word == "here" else world.mention(rest, ["place"])
        if place is None:
            return []
        there = thing in state.items_at.get(place, [])
        grounded = there != negated or _together(seen, thing, place)
        return [(grounded, f"{display(thing)} is {'' if there else 'not '}in {display(place)}")]
    if not (_participle(word) or word in STATES or word.endswith("ing")) or word in LOCATIVE:
        return []
    name = display(thing).lower()
    for fact, (subject, states) in world.facts.items():
        if (name.split()[-1] in subject or " ".join(subject) == name) and set(_stems(word)) & set(_stems(states[0])):
            holds = fact in state.facts
            told = f"the world says {display(fact).lower()} is {str(holds).lower()}"
            return [(holds != negated, told)]
    return [(_read(read, _stems(word)), f"'{word}' about {name}: nothing the player read says so")]


def seen_text(turn: dict[str, Any], first: bool) -> str:
    """What a user turn shows the player: the first turn's task and observation, not its action list."""
    text = turn.get("content", "").replace("\u2019", "'").lower()
    if first and "available actions:" in text:
        head, _, tail = text.partition("available actions:")
        text = head + " " + (tail.split("observation:", 1)[1] if "observation:" in tail else "")
    return text


def check_thoughts(script: Script, turns: list[dict[str, Any]], steps: list[dict[str, Any]] | None) -> ThoughtCheck:
    """Every state assertion of the trained thoughts, judged against what was read and the replayed world."""
    world, result = World(script), ThoughtCheck()
    state, seen, index = WorldState.initial(script), [], 0
    for turn in turns:
        if turn.get("role") != "assistant":
            seen.append(seen_text(turn, not seen))
            continue
        index += 1
        done = (steps or [])[index - 1] if steps and index <= len(steps) else None
        if turn.get("loss"):
            result.trained += 1
            thought = re.sub(r"^\s*Thought:\s*", "", turn.get("content", "").split("Action:")[0]).strip()
            for clause in _clauses(thought):
                for grounded, reason in _judge_clause(world, clause, state, seen):
                    result.assertions += 1
                    if not grounded:
                        result.ungrounded.append(Finding(index, thought, clause, reason))
            for clash in clashes(script, thought, done.get("action", {})) if done else []:
                reason = f"names {', '.join(clash.named)}; the action is {clash.call}"
                result.clashes.append(Finding(index, thought, clash.sentence, reason))
        if done and done.get("evaluation", {}).get("error") == "none":
            action = done.get("action", {})
            moved = world_step(script, state, action.get("name", ""), action.get("params", {}))
            state = moved.after if moved.check.ok else state
    return result
