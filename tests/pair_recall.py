"""The recall replies of tests/pair_traces.py's run: a strong model answering prompts/coa/recall.md.

Each reply is what such a model writes for that trajectory's prompt (the AFM instruction and the
question) under the recall system message: a plan, its reasoning to the answer, a double check with
an honest score. They are keyed by a line of the question they answer (the loopback server routes on
it). Where the model errs, it errs as models do from memory: a rounded population given for an exact
one, an area sum built on one area off by a few km², a surd estimated one decimal too coarsely; where
the question hangs on a date it cannot know (OPEC's membership), it says so in its score.
"""

from __future__ import annotations

import json


def recall(plan_think: str, steps: list[str], think: str, answer: str, check_think: str, comment: str,
           score: int) -> str:  # fmt: skip
    reply = {"plan_think": plan_think, "steps": steps, "think": think, "answer": answer, "check_think": check_think,
             "comment": comment, "score": score}  # fmt: skip
    return json.dumps(reply, ensure_ascii=False)


RECALL = {
    "ISO 4217 code THB": recall(
        "The question chains three facts: the country that uses THB, its neighbours, and the population of the "
        "largest of them. I know each link well enough to answer without a search.",
        [
            "Identify the currency with ISO 4217 code THB and its country.",
            "List that country's land neighbours and pick the most populous.",
            "Recall that neighbour's population.",
        ],  # fmt: skip
        "THB is the Thai baht, so the country is Thailand. Thailand borders Myanmar, Laos, Cambodia and Malaysia, "
        "and Myanmar is the most populous of them at roughly 54 million people by recent estimates (Malaysia is "
        "about 34 million, Cambodia about 17 million, Laos about 7.5 million).",
        "54 million",
        "A population is asked for, so a number is the right form. THB to Thailand to Myanmar is certain: Myanmar "
        "outnumbers Malaysia by some 20 million. The figure is an estimate, and sources differ by a million or two "
        "with the year, but 54 million is the one usually cited.",
        "Every link of the chain is certain, and the population is right to the nearest million.",
        3,
    ),
    "Tugrik": recall(
        "Two of the three countries are given by a clue: the Tugrik and Port Moresby. Once they are named, the "
        "answer is a sum of three areas I know.",
        [
            "Name the country whose currency is the Tugrik.",
            "Name the country whose capital is Port Moresby.",
            "Recall the three areas in km² and add them.",
        ],  # fmt: skip
        "The Tugrik is Mongolia's currency and Port Moresby is the capital of Papua New Guinea. From memory: "
        "Brazil 8,515,767 km², Mongolia 1,564,116 km², Papua New Guinea 462,840 km². 8,515,767 + 1,564,116 = "
        "10,079,883, plus 462,840 gives 10,542,723.",
        "10542723",
        "Both identifications are certain. Adding again: 8,515,767 + 462,840 = 8,978,607, and + 1,564,116 = "
        "10,542,723, the same total. The areas are the standard figures; sources differ slightly on them.",
        "The countries and the arithmetic are sure, and the areas are the figures usually given.",
        3,
    ),
    "who got the first nobel prize in physics": recall(
        "The first Nobel Prizes were awarded in 1901, and the physics laureate that year is well known.",
        ["Recall who received the 1901 Nobel Prize in Physics."],
        "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, for his discovery of X-rays.",
        "Wilhelm Conrad Röntgen",
        "The prize was first given in 1901, and Röntgen's X-rays, discovered in 1895, are what it honoured; the "
        "history of X-rays and the lists of laureates agree on him.",
        "Two things I know independently, the first laureates and the history of X-rays, name the same man.",
        4,
    ),
    "how many countries are a part of opec": recall(
        "This asks for OPEC's current membership, which has changed several times, so I count from the joins and "
        "departures I know.",
        ["Recall OPEC's members after the latest joins and departures.", "Count them."],
        "OPEC had 15 members in 2018, after the Republic of the Congo joined. Qatar left at the start of 2019, "
        "Ecuador in 2020 and Angola at the start of 2024, which leaves 12: Algeria, Congo, Equatorial Guinea, "
        "Gabon, Iran, Iraq, Kuwait, Libya, Nigeria, Saudi Arabia, the UAE and Venezuela.",
        "12",
        "The count depends on the date the question means, and it gives none. Membership changes often: Angola's "
        "exit is recent, and a join or departure after what I know would change the number.",
        "The membership changes from year to year, and without a source I cannot be sure of today's figure.",
        2,
    ),
    "1-2+3-4+5": recall(
        "An alternating sum of 1 to 100 falls apart into equal pairs.",
        ["Pair the terms: (1-2) + (3-4) + ... + (99-100).", "Count the pairs and add their values."],
        "Group the terms in pairs: (1-2) + (3-4) + ... + (99-100). There are 50 pairs and each is -1, so the sum "
        "is -50.",
        "-50",
        "Another way: the odd terms 1 + 3 + ... + 99 sum to 50² = 2500 and the even ones 2 + 4 + ... + 100 to "
        "2550, so the sum is 2500 - 2550 = -50, as before.",
        "Two derivations give -50.",
        4,
    ),
    "10x^3-\\frac{1}{2x^2}": recall(
        "A constant term of a binomial power comes from the general term with x to the power 0.",
        [
            "Write the general term of the expansion.",
            "Find k where the power of x is 0.",
            "Evaluate that term's coefficient.",
        ],  # fmt: skip
        "The general term is C(5,k)(10x^3)^(5-k)(-1/(2x^2))^k, whose power of x is 3(5-k) - 2k = 15 - 5k, zero at "
        "k = 3. That term is C(5,3) * 10^2 * (-1/2)^3 = 10 * 100 * (-1/8) = -125.",
        "-125",
        "Checking each factor again: the power 15 - 5k vanishes only at k = 3; C(5,3) = 10; (10x^3)^2 gives 100; "
        "(-1/2)^3 = -1/8, negative since k is odd. 10 * 100 / 8 = 125, with the minus sign.",
        "Each factor checks out step by step.",
        3,
    ),
    "(\\sqrt{7} + \\sqrt{5})^6": recall(
        "Squaring first keeps the surds manageable; then the total needs an estimate fine enough to take its floor.",
        [
            "Square the sum: (√7 + √5)² = 12 + 2√35.",
            "Cube that to write the sixth power as a + b√35.",
            "Estimate b√35 closely enough to find the greatest integer below the total.",
        ],  # fmt: skip
        "(√7 + √5)² = 7 + 5 + 2√35 = 12 + 2√35. Cubing: 12³ + 3·12²·2√35 + 3·12·(2√35)² + (2√35)³ = 1728 + 864√35 "
        "+ 5040 + 280√35 = 6768 + 1144√35. With √35 ≈ 5.9161, 1144 × 5.9161 ≈ 6768.02, so the total is about "
        "13536.02 and the greatest integer below it is 13536.",
        "13536",
        "The expansion checks out term by term: 3·144·2 = 864, 3·12·140 = 5040, 8·35 = 280. The floor is the weak "
        "point: 1144√35 lands within a few hundredths of 6768, and my √35 is good to four decimals only, so an "
        "error in the fourth place moves the total across 13536.",
        "The algebra is sure, but the total sits so close to 13536 that my estimate of √35 cannot settle on which "
        "side of it the value falls.",
        2,
    ),
}
# A reply that ignores the JSON it was asked for: what a chat model says when it would rather look it up.
GARBAGE = (
    "I can't browse the web in this step, so I can't confirm the current owner of Reading F.C. As of my last "
    "update, the club was owned by Dai Yongge, with his sister Dai Xiuli, but ownership may have changed since."
)
