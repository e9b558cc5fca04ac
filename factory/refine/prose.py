"""What the world-judged DM says, as a DM would say it: what changed, and what is still missing.

Why: the world's first narration was machine text, the call echoed and the
whole room again after every success (`take(item=wrench) worked. You are in
...`), and a refusal quoted the fact's id (`needs "vitals checked"`). A
trainee learns from what it reads, so the DM now says only what changed (what
the player picked up or put down, what became true, and the room only on
arriving somewhere or on a look), and names a missing fact in words made from
its name: `vitals_checked` -> "the vitals have not been checked". Each kind of
event has a few phrasings, chosen by a stable hash of the event and the state
(narration.pick), so rows do not share one observation skeleton. Only the text
is chosen here; the state comes from world.step, unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .narration import display, listing, pick, sentence, the
from .script import ScriptDraft

if TYPE_CHECKING:  # world.py words its refusals of facts here
    from .world import WorldState

# Past participles that do not end in -ed, for fact names such as `beacon_lit` or `talk_given`.
IRREGULAR = set(
    "built bought brought caught cut done drawn dug eaten fed found given grown held hung kept laid left lit made met "
    "paid put read run said seen sent set shown shut sold spent spun swept taken taught thrown told torn won worn "
    "written begun broken chosen driven frozen hidden spoken stolen sung woken".split()
)
# Words that say a state rather than an act (`tap_open`, `lights_on`).
STATES = set(
    "open closed on off ready clean dirty empty full safe dry wet warm hot cold locked running active live complete "
    "available secure stable tidy charged calm awake asleep home away up down out in inside outside".split()
)
PARTICLES = {"out", "up", "in", "off", "down", "away", "back", "over", "on"}
DETERMINERS = {"the", "a", "an", "my", "your", "his", "her", "their", "our", "its"}
NOT_PARTICIPLES = {"bed", "shed", "red", "need", "seed", "feed", "speed", "sled", "deed", "weed", "bred"}

WORDS: dict[str, list[str]] = {
    "fact_missing": ["You can't do that yet: {clause}.", "Not yet: {clause}.", "That has to wait, since {clause}.",
                     "It is too early for that: {clause}."],
    "fact_present": ["There is no need: {clause}.", "That is pointless now: {clause}.", "You can't do that: {clause}."],
    "fact_missing_act": ["You can't do that yet: first you need to {act}.", "Not yet. That comes after you {act}."],
    "fact_unknown": ["You can't do that yet; something else has to happen first.",
                     "That is not possible at the moment."],
    "fact_set": ["{clause}.", "Done: {clause}.", "It works: {clause}.", "Good, {clause}."],
    "fact_cleared": ["{clause}.", "Done: {clause}.", "That is seen to: {clause}."],
    "take": ["You pick up {item}.", "You take {item} with you.", "{item} is in your hands now.", "You grab {item}."],
    "drop": ["You put down {item}.", "You leave {item} here.", "You set {item} down."],
    "holding": ["You now carry {held}.", "Now you have {held} with you.", "You now have {held} in hand."],
    "arrive": ["You make your way to {place}.", "You walk over to {place}.", "You get to {place}.",
               "You head to {place}."],
    "stay": ["You are already in {place}.", "You stay where you are, in {place}."],
    "look": ["You look around {place}.", "You take a good look around {place}."],
    "items": ["You see {items}.", "You notice {items}.", "Here you find {items}.", "Lying here: {items}."],
    "no_items": ["There is nothing here to pick up.", "Nothing here is worth taking.", "You see nothing you could use."],
    "unchanged": ["You {act}. Nothing else changes.", "You {act}; nothing around you changes.",
                  "You {act}, and everything stays as it was."],
    "done": ["That completes the task.", "With that, the task is done.", "And that finishes the job."],
}  # fmt: skip
LOOKING = ("look", "examine", "observe", "survey", "search", "scan", "explore", "inspect_room")


def _participle(word: str) -> bool:
    return word in IRREGULAR or (len(word) > 3 and word.endswith("ed") and word not in NOT_PARTICIPLES)


def _plural(noun: str) -> bool:
    return noun.endswith("s") and not noun.endswith(("ss", "us", "is"))


def fact_clause(fact: str, how: str) -> str | None:
    """A fact in words, as `how` needs it: "missing" (it should hold and does not), "present" (it should
    not hold and does), "set" (it just became true) or "cleared"; None when its name does not read as
    "<subject> <participle or state>" (`vitals_checked`, `donations_set_out`, `tap_open`, `twins_napping`)."""
    words = display(fact).lower().split()
    tail = 2 if len(words) > 2 and words[-1] in PARTICLES and _participle(words[-2]) else 1
    subject, verb = words[:-tail], " ".join(words[-tail:])
    if not subject or subject[0] in ("is", "has", "was", "are", "have") or _participle(subject[0]):
        return None
    last = verb.split()[0]
    if not (_participle(last) or last in STATES or last.endswith("ing")):
        return None
    noun = " ".join(subject)
    noun = noun if subject[0] in DETERMINERS else the(noun)
    many = _plural(subject[-1])
    be, have = ("are", "have") if many else ("is", "has")
    if _participle(last):
        forms = {"missing": f"{noun} {have} not been {verb}", "present": f"{noun} {have} already been {verb}",
                 "set": f"{noun} {be} now {verb}", "cleared": f"{noun} {be} no longer {verb}"}  # fmt: skip
    else:
        forms = {"missing": f"{noun} {be} not {verb}", "present": f"{noun} {be} already {verb}",
                 "set": f"{noun} {be} now {verb}", "cleared": f"{noun} {be} no longer {verb}"}  # fmt: skip
    return forms[how]


def fact_refusal(script: ScriptDraft, fact: str, wanted: bool, key: Any = "") -> str:
    """What the DM says when an action needs `fact` to be `wanted` and it is not: in words, never its id."""
    clause = fact_clause(fact, "missing" if wanted else "present")
    if clause:
        return sentence(
            pick(WORDS["fact_missing" if wanted else "fact_present"], fact, wanted, key).format(clause=clause)
        )
    setter = next((a for a in script.actions for e in a.effects if e.value == fact
                   and e.kind == ("set_fact" if wanted else "clear_fact")), None)  # fmt: skip
    if setter is None:
        return pick(WORDS["fact_unknown"], fact, key)
    return sentence(pick(WORDS["fact_missing_act"], fact, key).format(act=display(setter.name)))


def act_words(name: str, params: dict[str, Any]) -> str:
    """An action in words: `check_vitals(arm=left)` -> "check vitals (left)"."""
    values = ", ".join(display(v) for v in params.values())
    return f"{display(name)} ({values})" if values else display(name)


def arrival(script: ScriptDraft, place: str, items_here: list[str], key: Any, how: str = "arrive") -> str:
    """The room, said once: on arriving somewhere (`how`: "arrive", or "stay" when the move leads where the
    player already is), or when the player looks around ("look")."""
    here = script.location(place)
    opening = pick(WORDS[how], place, key).format(place=the(place))
    found = (
        pick(WORDS["items"], key).format(items=listing(items_here, "")) if items_here else pick(WORDS["no_items"], key)
    )
    return " ".join(sentence(part) for part in (opening, here.description if here else "", found) if part)


def narrate_success(
    script: ScriptDraft, before: WorldState, after: WorldState, name: str, params: dict[str, Any], done: bool = False
) -> str:
    """What the DM says after an accepted action: only what it changed (the `before` and `after` world
    states), in varied prose; the task's completion when `done`."""
    key = (script.task, name, sorted(params.items(), key=str), after.key())
    parts: list[str] = []
    gained = [i for i in after.inventory if i not in before.inventory]
    lost = [i for i in before.inventory if i not in after.inventory]
    parts += [pick(WORDS["take"], item, key).format(item=the(item)) for item in gained]
    parts += [pick(WORDS["drop"], item, key).format(item=the(item)) for item in lost]
    if gained and len(after.inventory) > 1:
        parts.append(pick(WORDS["holding"], key).format(held=listing(after.inventory, "")))
    for fact in sorted(after.facts - before.facts):
        parts.append(_fact_change(script, fact, "set", name, params, key))
    for fact in sorted(before.facts - after.facts):
        parts.append(_fact_change(script, fact, "cleared", name, params, key))
    moved = after.location != before.location
    looking = not parts and any(word in name.lower() for word in LOOKING)
    if moved or looking or (not parts and _moves(script, name)):
        how = "arrive" if moved else "look" if looking else "stay"
        parts.append(arrival(script, after.location, after.items_here(), key, how))
    if not parts:
        parts.append(pick(WORDS["unchanged"], key).format(act=act_words(name, params)))
    if done:
        parts.append(pick(WORDS["done"], key))
    return " ".join(sentence(p) for p in parts)


def _moves(script: ScriptDraft, name: str) -> bool:
    action = script.action(name)
    return action is not None and any(e.kind == "move_to" for e in action.effects)


def _fact_change(script: ScriptDraft, fact: str, how: str, name: str, params: dict[str, Any], key: Any) -> str:
    clause = fact_clause(fact, how)
    if clause:
        return pick(WORDS[f"fact_{how}"], fact, key).format(clause=clause)
    return f"You {act_words(name, params)}."  # a name that does not read as a state: say the act itself
