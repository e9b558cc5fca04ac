"""The chosen side of a refine step pair may only say what its prompt grounds.

A refine pair's prompt is the conversation up to a mistaken step; its chosen side is the correction the
trajectory took. But that correction's thought was written *after* the DM's refusal ("Five litres is
more than the can holds. Two litres should be enough."), and the pair's prompt holds neither the mistake
nor the refusal: a chosen thought that answers them teaches a model to react to an observation it never
saw. So the chosen thought keeps only the sentences that stand on the prompt alone; a sentence goes when

1. it reacts: a word of realisation or correction ("of course", "forgot", "already", "instead", "still",
   "anyway", ...), an opening such as "Right," / "So" / "No", a trailing "then", a negation ("not",
   "isn't", "no", "can't": a player says what is *not* so after being told), or hindsight, the player's
   own earlier intent or attempt ("what I meant to give", "I'd meant twelve", "I tried", "my first
   plan"): in the pair's prompt that attempt was never made, it is the rejected side;
2. it names something only the left-out turns said: a content word (stemmed; number words as digits) of
   the mistake(s) and refusal(s) between the prompt and the correction that neither the prompt nor the
   correction's own action line holds ("five" litres, the can that "holds");
3. it points back ("That's kept ...", "Let me go there.", "Grab them ...": a pronoun, or an opening
   "So" / "Then") right after a sentence that went, or as the first sentence, where what it points
   back to is the refusal: either way its antecedent is gone.

What is left, in order, is the chosen thought. When nothing is left the pair has no chosen side (the
reason is counted; its rejected side is still a KTO undesirable row).

Not a rule here: the grounded-thought check (refine/grounded_thoughts.py). It grounds a claim by the
replayed world as well as by what the player read, so a claim the refusal taught that is true in the
world (the leak this module stops) passes it; what it finds beyond rules 1-3 is a claim the world
contradicts, which the trajectory's SFT rows hold too: the refine path records that check on every row
and the `grounded_thoughts` filter drops such a row, with its pairs, from every export.
"""

from __future__ import annotations

import re

SENTENCES = re.compile(r"(?<=[.!?])\s+")
REACTION = re.compile(
    r"\b(of course|oops|whoops|forgot|forgotten|forget|mistake|mistaken|wrong|silly|my bad|realis\w*|realiz\w*|"
    r"apparently|turns out|after all|anyway|already|either|instead|again|actually|still|no need|no longer|"
    r"nothing|nobody|none|rather)\b"
)
OPENER = re.compile(r"^(right|ok|okay|ah|oh|hmm|wait|well|so|no|good|fine|alright|yes|true|indeed|sorry|huh)\b")
NEGATION = re.compile(r"\b(not|no|never|cannot)\b|n't\b")
# The player's own earlier intent or attempt: "what I meant to give", "I'd meant", "I tried", "my first plan".
HINDSIGHT = re.compile(
    r"\bi(?:'d|'ve| had| have)?\s+(?:meant|intended|tried|wanted|planned|hoped|expected|assumed|thought|figured)\b"
    r"|\bi was (?:going|about) to\b|\bwhat i had in mind\b"
    r"|\bmy (?:first|original|earlier|initial) (?:plan|idea|choice)\b"
)
THEN_END = re.compile(r"\bthen\W*$")
# Words that point back to what was said before; "there" as in "there is" points nowhere.
ANAPHORA = re.compile(
    r"\b(it|its|they|them|their|he|she|him|his|her)\b|\bthere\b(?!\s+(?:is|are|was|were|'s)\b)|^(so|then|which|both)\b"
)
# A demonstrative points back unless it introduces a thing the prompt names ("these plants"); "that's", "with that".
DEMONSTRATIVE = re.compile(r"\b(?:this|that|these|those)\b(?:\s+([a-z0-9]+))?")
ACRONYM = re.compile(r"\b[A-Z]{2,}\b")  # "IT", "SOC": not the pronoun "it"
WORD = re.compile(r"[a-z0-9]+")
NUMBER_WORDS = dict(
    zip(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split(),
        map(str, range(21)),
    )
) | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100"}
# Function words, modal and generic verbs and directions: they name nothing, so a refusal's "you need to be
# up on the roof" does not make "I need to get up the ladder" a reaction to it.
STOPWORDS = set(
    "the and for you your are was were with that this have has had but can will into from there here what which they "
    "them their then than its all any some our out off over now just also very too only more most much many about "
    "after before again once while when where who whom why how thought action observation need needs want get got "
    "going let make must should would could may might shall yet first way time thing things something anything "
    "everything lot bit down back away onto inside outside across along around through toward towards near next "
    "one".split()
)


def normal(text: str) -> str:
    return text.replace("\u2019", "'").lower()


def stem(word: str) -> str:
    """A crude common stem, the same on both sides: "holds" / "holding" -> "hold", "litres" -> "litr"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def content_words(text: str) -> set[str]:
    words = (NUMBER_WORDS.get(w, w) for w in WORD.findall(normal(text)))
    return {stem(w) for w in words if w not in STOPWORDS and (len(w) >= 3 or w.isdigit())}


def reacts(sentence: str) -> bool:
    text = normal(sentence).strip()
    return any(p.search(text) for p in (REACTION, NEGATION, THEN_END, HINDSIGHT)) or bool(OPENER.match(text))


def grounded_thought(thought: str, prompt_text: str, left_out_text: str, action_line: str) -> str | None:
    """The sentences of a correction's thought that stand on the prompt alone (rules 1-3), or None."""
    sentences = [s.strip() for s in SENTENCES.split(thought.strip()) if s.strip()]
    novel = content_words(left_out_text) - content_words(prompt_text) - content_words(action_line)
    keep = [not reacts(s) and not (content_words(s) & novel) for s in sentences]
    keep = _without_dangling(sentences, keep, content_words(prompt_text))
    kept = " ".join(s for s, k in zip(sentences, keep) if k)
    return kept or None


def _without_dangling(sentences: list[str], keep: list[bool], prompt_words: set[str]) -> list[bool]:
    """Rule 3: a sentence that points back goes when the one before it went; before the first sentence
    stands the refusal the prompt lacks, so a first sentence that points back goes too."""
    out = list(keep)
    for i, sentence in enumerate(sentences):
        if out[i] and (i == 0 or not out[i - 1]) and points_back(sentence, prompt_words):
            out[i] = False
    return out


def points_back(sentence: str, prompt_words: set[str]) -> bool:
    text = normal(ACRONYM.sub("", sentence))
    if ANAPHORA.search(text):
        return True
    return any(not noun or stem(noun) not in prompt_words for noun in DEMONSTRATIVE.findall(text))
