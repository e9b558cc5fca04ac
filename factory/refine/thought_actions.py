"""Thoughts that agree with their actions (issue 28): a thought that names its move names this one.

"Thought: I am going to take the laptop." over `take(item=textbook)` teaches a student to say one thing
and do another. `clashes(script, thought, action)` reads each sentence of the thought for the action's own
verb ("take", "takes", "taking"; "pick up" for `pick_up`), where nothing just before it puts it aside
("not", "don't", "instead of", "rather than", "without"), and the names that follow it up to the end of
its clause or the next verb of the script: the script's items and places of the kinds the action's
parameters take, its valid values and the call's own values (name forms as in grounded_thoughts.py:
`math_textbook`, "math textbook", "textbook"). The thought agrees when one such mention names a value of
the call, or when none names anything ("I'll take it"); otherwise the sentences whose mentions name other
things are its clashes. A thought that never names a value of the call and announces another action of the
script as the move ("I am going to the storeroom." over `take(item=drug_key)`) clashes too (`other_moves`). A past move ("I took the key") is another form of the verb and is not read; a plan
that names a later move with the same verb agrees as long as one mention is this call's ("after taking the
key I'll take the lamp"); "going to" + a verb is the future, not the move `go`.

Used twice: scaffold.py re-asks once (same moves) when a written thought clashes with its fixed action,
then takes, step by step, whichever of the two thoughts agrees, else drops the clashing sentences
(`without_clashes`); grounded_thoughts.check_thoughts counts the trained thoughts that
still clash, so the `grounded_thoughts` filter drops such a row with the clash as its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .mentions import name_forms, name_pattern
from .narration import display
from .prose import PARTICLES
from .script import Action, Script
from .world import format_action

RULE = "thought_action"  # the verdict rule of a scaffolded attempt whose thought names another move
SENTENCES = re.compile(r"(?<=[.!?])\s+")
BOUNDARY = re.compile(r"[,;:.!?]|\b(?:then|before|after|because|so|while|once|when|instead|but|until)\b")
PUT_ASIDE = re.compile(
    r"(?:\bnot|n't|\bnever|\binstead of|\brather than|\bwithout|\bno need to|\bno longer)\s+(?:\w+\s+){0,2}$"
)
DETERMINERS = r"(?:the|a|an|my|his|her|their|its|our|your|this|that|these|those|some)\b"
# A verb after these is a move before or after this one, not the move now ("after going to the ward, ...").
ANOTHER_TIME = re.compile(r"(?:\bafter|\bbefore|\bsince|\bnow that|\bhaving|\bonce|\buntil)\s+(?:\w+\s+){0,2}$")


@dataclass
class Clash:
    step: int  # the step's index, 0-based
    sentence: str  # as written
    named: list[str]  # what it names after the verb, none of them the call's
    call: str  # the action, as the player writes it

    def text(self) -> str:
        names = ", ".join(display(n) for n in self.named)
        return f"step {self.step + 1}: '{self.sentence[:100]}' names {names}; the action is {self.call}"


def verb_forms(name: str) -> list[str]:
    """An action's name as a verb a thought may use for the move now (not its past: a move already made):
    `pick_up` -> "pick up", "picks up", "picking up"; `check_vitals` -> those of "check vitals" and "check"."""
    head, *rest = display(name).lower().split() or [""]
    ing = head[:-1] + "ing" if head.endswith("e") and not head.endswith("ee") else head + "ing"
    heads = {head, head + ("es" if head.endswith(("s", "sh", "ch", "x", "z", "o")) else "s"), ing}
    if re.fullmatch(r"[^aeiou]*[aeiou][^aeiouwxy]", head):  # put -> putting, dig -> digging
        heads.add(head + head[-1] + "ing")
    alone = [] if not rest or all(w in PARTICLES for w in rest) else sorted(heads)  # "check the vitals"
    return [" ".join([h, *rest]) for h in sorted(heads)] + alone


def _canon(value: Any) -> str:
    return display(value).lower()


def value_forms(script: Script, action: Action, params: dict[str, Any]) -> dict[str, set[str]]:
    """form -> the names it may mean, over what the action's parameters take: their valid values, the items
    or places of the script when a valid value is one, and the call's own values."""
    env = script.environment
    items = {i for loc in env.locations for i in loc.items} | set(env.player.inventory)
    places = {loc.name for loc in env.locations}
    values = {v for p in action.parameters for v in p.valid_values}
    names = values | {str(v) for v in params.values()}
    names |= items if values & items else set()
    names |= places if values & places else set()
    forms: dict[str, set[str]] = {}
    for name in names:
        for form in name_forms(str(name).replace(" ", "_")):
            forms.setdefault(form, set()).add(_canon(name))
    return forms


def clashes(script: Script, thought: str, action: dict[str, Any], step: int = 0) -> list[Clash]:
    """The sentences of `thought` that name, for the action's verb, only things other than the call's
    values; none when one mention names the call's or the action takes no parameter."""
    definition = script.action(str(action.get("name", "")))
    params = action.get("params") or {}
    if definition is None or not definition.parameters or not params:
        return []
    forms = value_forms(script, definition, params)
    own, values = name_pattern(verb_forms(definition.name)), name_pattern(forms)
    verbs = name_pattern(f for a in script.actions for f in verb_forms(a.name))
    called = {_canon(v) for v in params.values()}
    found, agrees = [], False
    for sentence in SENTENCES.split(thought.strip()):
        text = sentence.replace("\u2019", "'").lower()
        named: list[str] = []
        for verb in re.finditer(own, text):
            after = text[verb.end() :]
            if PUT_ASIDE.search(text[: verb.start()]) or _future(verb.group(1), after, values):
                continue
            clause = BOUNDARY.split(after, maxsplit=1)[0]
            following = re.search(verbs, clause)
            clause = clause[: following.start()] if following else clause
            names = {n for form in re.findall(values, clause) for n in forms[form]}
            agrees |= bool(names & called)
            named += [] if names & called else sorted(names)
        if named:
            found.append(
                Clash(step, sentence.strip(), list(dict.fromkeys(named)), format_action(definition.name, params))
            )
    return [] if agrees else found + other_moves(script, definition, params, thought, step)


def other_moves(script: Script, definition: Action, params: dict[str, Any], thought: str, step: int) -> list[Clash]:
    """The sentences that announce another action of the script as the move ("I am going to the storeroom."
    over take(item=drug_key)), when the thought never names a value of the call: a thought that does speaks
    of this move, whatever else it plans. A move put aside, in the past, before or after this one, or the
    future of a verb is not read."""
    calls = name_pattern(f for value in params.values() for f in name_forms(str(value).replace(" ", "_")))
    if re.search(calls, thought.replace("\u2019", "'").lower()):
        return []
    own, found = set(verb_forms(definition.name)), []
    readers = [move_reader(script, a) for a in script.actions if a.parameters and not set(verb_forms(a.name)) & own]
    for sentence in SENTENCES.split(thought.strip()):
        text = sentence.replace("\u2019", "'").lower()
        named = [name for reader in readers for name in announced(reader, text)]
        if named:
            found.append(
                Clash(step, sentence.strip(), list(dict.fromkeys(named)), format_action(definition.name, params))
            )
    return found


def move_reader(script: Script, action: Action) -> tuple[dict[str, set[str]], str, str]:
    """(value form -> names, the verb pattern, the value pattern) of an action, built once per thought."""
    forms = value_forms(script, action, {})
    return forms, name_pattern(verb_forms(action.name)), name_pattern(forms)


def announced(reader: tuple[dict[str, set[str]], str, str], text: str) -> list[str]:
    """What `text` names after the action's verb as the move now (its values, in the verb's clause)."""
    forms, verbs, values = reader
    named: list[str] = []
    for verb in re.finditer(verbs, text):
        before, after = text[: verb.start()], text[verb.end() :]
        if PUT_ASIDE.search(before) or ANOTHER_TIME.search(before) or _future(verb.group(1), after, values):
            continue
        clause = BOUNDARY.split(after, maxsplit=1)[0]
        named += sorted({name for form in re.findall(values, clause) for name in forms[form]})
    return named


def _future(verb: str, after: str, values: str) -> bool:
    """ "going to take ...": the future of another verb, not the move `go` ("going to the shed" is)."""
    return verb.endswith("ing") and bool(
        re.match(r"\s+to\s+(?!" + DETERMINERS + r")", after) and not re.match(r"\s+to\s+" + values, after)
    )


def step_clashes(script: Script, steps: list[dict[str, Any]]) -> list[Clash]:
    """Every step's clashes between its thought and its action, in step order."""
    return [c for i, s in enumerate(steps) for c in clashes(script, s.get("thought", ""), s.get("action", {}), i)]


def without_clashes(
    script: Script, steps: list[dict[str, Any]], earlier: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]] | None:
    """The steps with each clashing thought replaced: by the same step's thought in `earlier` (the attempt
    that was re-asked, same moves) when that one agrees, else by its own sentences less the clashing ones
    (kept, as written, under `dropped_thought`), else by the earlier one's; None when nothing is left."""
    out = []
    for index, step in enumerate(steps):
        options = [step] + ([earlier[index]] if earlier else [])
        clean = next((s for s in options if not _clashing_sentences(script, s, index)), None)
        kept = clean or next(filter(None, (_trimmed(script, s, index) for s in options)), None)
        if kept is None:
            return None
        out.append(kept)
    return out


def _clashing_sentences(script: Script, step: dict[str, Any], index: int) -> set[str]:
    return {c.sentence for c in clashes(script, step.get("thought", ""), step.get("action", {}), index)}


def _trimmed(script: Script, step: dict[str, Any], index: int) -> dict[str, Any] | None:
    """The step with its thought's clashing sentences dropped; None when nothing else is left."""
    drop = _clashing_sentences(script, step, index)
    kept = [s for s in SENTENCES.split(step.get("thought", "").strip()) if s.strip() not in drop]
    return {**step, "thought": " ".join(kept), "dropped_thought": sorted(drop)} if kept else None
