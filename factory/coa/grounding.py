"""Which answer-bearing claims of a run an observation supports, and whether the answer came before any.

    grounding(trace) -> Grounding(claims, grounded, ungrounded, answer_before_tool)

Capable models answer from memory ("I recall it sank in November 1915") and assert facts
no result contains (issue 25). The answerer lists the facts its answer rests on, each citing
the call whose result shows it (`Event.evidence`); here each claim is held against that
observation:

- a claim's key terms are its numbers (thousands separators dropped: 472,317 = 472317; a
  decimal matches an observed one it rounds from: 2.1794 in "2.179449"), its capitalised names
  (a possessive 's aside; single letters and two-letter symbols such as "N" or "DP" are
  notation, not names) and its quoted phrases; the claim is grounded when every key term not
  already in the question appears in the cited observation (for a program, its output or
  its code: "500 random cases" is read off the code), or, cited wrongly, in the observations
  together (a figure no tool printed is in none of them); a claim whose terms the question
  already holds ("prints 10 on sample 1") needs one of its numbers in the cited output. A claim without key
  terms needs most of its content words in the cited observation. A citation of a call that
  does not exist grounds nothing.
- the answer is one more claim: grounded when an observation contains it (qa, math: a run
  printed the value), when it is derived from grounded claims only (a sum of looked-up
  figures), or, for a program, when a successful code call ran it.
- `answer_before_tool`: the answer (3 characters or more, normalised) already appears in the
  agent's text before its first observation: it was recalled, then looked up. None when the
  answer is too short to tell, or a program.

The counts go into the row's stats (coa/stats.py) and the `grounded` filter reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..checks.extract import last_boxed, python_code
from ..checks.text import normalize_answer
from .samples import normalized_program
from .tools.code import program_and_stdin
from .trace import Event, Evidence, ToolCall, Trace

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*")
POSSESSIVE = re.compile(r"['’]s$")
DECIMAL = re.compile(r"-?\d+\.\d+")
SCALED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(thousand|million|billion)\b", re.IGNORECASE)
SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9}
POWER = re.compile(r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s*\*\s*)?10\s*\*\*\s*(\d{1,2})|(?<![\w.])(\d+(?:\.\d+)?)e(\d{1,2})\b")
QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
STOP = frozenset("a an the of in on at to for by and or is was are were its it this that with from as be".split())
MIN_ANSWER_CHARS = 3  # shorter answers ("2", "no") turn up in any text: too short to tell recall from chance


@dataclass
class Grounding:
    claims: int = 0
    grounded: int = 0
    ungrounded: list[str] = field(default_factory=list)
    answer_before_tool: bool | None = None


def canonical(text: str) -> str:
    """Lower case, numbers without thousands separators, runs of spaces as one; a power written in code
    (2*10**5, 1e6) followed by its value, so a claim's 200000 is found in `n = 2 * 10**5`."""
    text = POWER.sub(lambda m: f"{m.group(0)} {power_value(m)}", text)
    text = NUMBER.sub(lambda m: m.group(0).replace(",", ""), text)
    return " ".join(text.lower().split())


def power_value(match: re.Match[str]) -> str:
    base, exponent = (match.group(1), match.group(2)) if match.group(2) else (match.group(3), match.group(4))
    value = float(base or 1) * 10 ** int(exponent)
    return str(int(value)) if value == int(value) else str(value)


def key_terms(claim: str) -> list[str]:
    """Numbers (a scaled one, "28.9 million", as "~28.9e6"), names and quoted phrases, lower-cased."""
    scaled = [f"~{m.group(1)}e{len(str(SCALES[m.group(2).lower()])) - 1}" for m in SCALED.finditer(claim)]
    claim = SCALED.sub(" ", claim)
    numbers = [*scaled, *(m.group(0).replace(",", "").rstrip(".") for m in NUMBER.finditer(claim))]
    names = [bare_name(m.group(0)) for m in CAPITALISED.finditer(claim) if not opener(claim, m)]
    names = [name for name in names if len(name) > 2 and name.lower() not in STOP]
    return [term.lower() for term in [*numbers, *names, *QUOTED.findall(claim)]]


def bare_name(name: str) -> str:
    """ "The Seine's" -> "Seine": leading stop words and a possessive off."""
    words = name.split()
    while len(words) > 1 and words[0].lower() in STOP:
        words.pop(0)
    return POSSESSIVE.sub("", " ".join(words))


def found(term: str, seen: str) -> bool:
    """The term in the canonical text; a decimal also when an observed decimal rounds to it."""
    if contains(seen, term):
        return True
    if term.startswith("~"):  # "28.9 million": an observed figure that rounds to it
        return any(rounds_to(value, term[1:]) for value in NUMBER.findall(seen))
    if not DECIMAL.fullmatch(term):
        return False
    places = len(term.split(".")[1])
    return any(round(float(value), places) == float(term) for value in DECIMAL.findall(seen))


def opener(text: str, match: re.Match[str]) -> bool:
    """A single capitalised word that opens a sentence ("According", "Its"): capitalised by position, not a name."""
    before = text[: match.start()].rstrip()
    return " " not in match.group(0) and (not before or before[-1] in ".:;!?")


def rounds_to(observed: str, scaled: str) -> bool:
    """Whether an observed number, rounded to the claim's precision, is the claim's "28.9e6"."""
    mantissa, exponent = scaled.split("e")
    places = len(mantissa.split(".")[1]) if "." in mantissa else 0
    try:
        return round(float(observed.replace(",", "")) / 10 ** int(exponent), places) == float(mantissa)
    except ValueError:
        return False


def claim_grounded(claim: str, observation: str, question: str, everything: str = "") -> bool:
    """`everything`: all the run's observations, for a claim that cites the wrong one."""
    seen, given, anywhere = canonical(observation), canonical(question), canonical(everything)
    every = key_terms(claim)
    terms = [term for term in every if not contains(given, term)]
    if terms:
        return all(found(term, seen) for term in terms) or all(found(term, anywhere) for term in terms)
    numbers = [term for term in every if NUMBER.fullmatch(term)]
    if numbers:  # "prints 10 on sample 1": values the question also shows; the run must have printed one
        return any(found(term, seen) for term in numbers)
    words = [w for w in re.findall(r"[a-z0-9]+", claim.lower()) if len(w) > 3 and w not in STOP]
    return bool(words) and sum(w in seen for w in words) >= 0.6 * len(words)


def grounding(trace: Trace) -> Grounding:
    """The grounding of an answered trace (an empty one for a trace without an accepted answer)."""
    suggested = last_suggested(trace.events)
    if trace.final_answer is None or suggested is None:
        return Grounding()
    observations = [evidence_text(call) for call in trace.tool_calls()]
    found = Grounding(answer_before_tool=recalled(trace))
    evidence_ok = True
    for item in suggested.evidence:
        ok = evidence_grounded(item, observations, trace.question)
        evidence_ok &= ok
        count(found, item.claim, ok)
    printed = [call.result for call in trace.tool_calls()]  # the answer itself must have been shown, not written
    answer_ok = answer_grounded(trace, printed) or (evidence_ok and bool(suggested.evidence))
    count(found, f"answer: {trace.final_answer.strip()[:200]}", answer_ok)
    return found


def evidence_text(call: ToolCall) -> str:
    """What a call shows: its observation, and for a program the program too ("500 random cases with N up to
    8" is read off the code, "mismatches 0" off its output). A search's query is not evidence of anything."""
    return f"{call.result}\n{call.argument}" if call.name == "code" else call.result


def count(found: Grounding, claim: str, ok: bool) -> None:
    found.claims += 1
    found.grounded += ok
    if not ok:
        found.ungrounded.append(claim)


def last_suggested(events: list[Event]) -> Event | None:
    return next((event for event in reversed(events) if event.kind == "suggested_answer"), None)


def evidence_grounded(item: Evidence, observations: list[str], question: str) -> bool:
    if item.call is None or not 1 <= item.call <= len(observations):
        return False
    return claim_grounded(item.claim, observations[item.call - 1], question, "\n".join(observations))


def answer_value(trace: Trace) -> str | None:
    """The answer as it would appear in a result: the boxed value (math) or the text (qa); None for programs."""
    answer = trace.final_answer or ""
    if trace.domain == "code":
        return None
    if trace.domain == "math":
        return last_boxed(answer) or answer
    return answer


def answer_grounded(trace: Trace, observations: list[str]) -> bool:
    if trace.domain == "code":
        program = normalized_program(python_code(trace.final_answer or ""))
        return any(
            call.name == "code" and call.ok and normalized_program(program_and_stdin(call.argument)[0]) == program
            for call in trace.tool_calls()
        )
    value = normalize_answer(answer_value(trace) or "")
    return bool(value) and any(contains(normalize_answer(canonical(text)), value) for text in observations)


def contains(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def recalled(trace: Trace) -> bool | None:
    value = normalize_answer(canonical(answer_value(trace) or ""))
    if trace.domain == "code" or len(value) < MIN_ANSWER_CHARS:
        return None
    before: list[str] = []
    for event in trace.events:
        if event.kind == "tool_call":
            before.append(event.think or "")
            break
        before += [event.think or "", event.content or ""]
    return contains(normalize_answer(canonical(" ".join(before))), value)
