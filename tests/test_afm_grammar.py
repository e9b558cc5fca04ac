"""AFM tagged text: parse, the grammar's rules one by one, and the two renderings."""

import random
from pathlib import Path

import pytest

from factory.coa.afm import (
    RULES,
    all_violations,
    double_check_score,
    double_check_text,
    make_blocks,
    neutralize_tags,
    parse_blocks,
    reflection_is_poor,
    reflection_scores,
    reflection_text,
    render_multiturn,
    render_single,
    scan,
    validate_afm,
)
from factory.coa.afm.blocks import markup
from factory.coa.tools import tool_tags

TASKS = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tasks"

POOR = reflection_text({"information_conflict": "good", "tool_effectiveness": "poor", "trajectory_progress": "average"})
GOOD = reflection_text({"information_conflict": "good", "tool_effectiveness": "good", "trajectory_progress": "good"})

# A web-agent trajectory touching every mas rule: poor reflection -> re-plan, low double check -> re-plan.
MAS_VALID = [
    ("think", "Two facts are needed: the capital, then its river."),
    ("plan", "1. Search the capital.\n2. Crawl a page on its river."),
    ("think", "Search first."),
    ("web_search", "capital of France"),
    ("observation", "Paris is the capital of France. <b>Source</b>"),
    ("think", "The search gave the capital but nothing on rivers."),
    ("reflection", "The query missed the river.\n" + POOR),
    ("think", "Re-plan around a direct page."),
    ("plan", "1. Crawl the Paris article."),
    ("think", "Crawl it."),
    ("crawl_page", "https://en.wikipedia.org/wiki/Paris"),
    ("observation", "Paris lies on the Seine."),
    ("think", "Propose an answer."),
    ("suggested_answer", "Loire"),
    ("think", "Check it against the page."),
    ("double_check", "The page says Seine.\n" + double_check_text(1)),
    ("think", "Re-plan: count the characters too."),
    ("plan", "1. Confirm with code."),
    ("think", "Count letters."),
    ("code", "```py\nprint(len('Seine'))\n```"),
    ("observation", "5"),
    ("think", "Now propose again."),
    ("suggested_answer", "Seine"),
    ("think", "Check again."),
    ("double_check", "Matches the page.\n" + double_check_text(4)),
    ("answer", "Seine"),
]

CODE_VALID = [
    ("plan", "Convert (0,3) to polar: r = 3, theta = pi/2."),
    ("think", "Check r and theta numerically."),
    ("code", "```py\nimport math\nprint(math.hypot(0, 3), math.atan2(3, 0))\n```"),
    ("observation", "3.0 1.5707963267948966"),
    ("reflection", "r = 3 and theta = pi/2, as expected."),
    ("think", "Write the answer."),
    ("answer", "\\boxed{\\left(3, \\frac{\\pi}{2}\\right)}"),
]


def text_of(pairs):
    return render_single("", make_blocks(pairs)).completion


def replace_at(pairs, index, *new):
    return pairs[:index] + list(new) + pairs[index + 1 :]


def test_the_hand_written_trajectories_are_valid():
    assert validate_afm(text_of(MAS_VALID), "mas").ok
    assert validate_afm(text_of(CODE_VALID), "code").ok
    python_answer = replace_at(CODE_VALID, 6, ("answer", "```py\nprint(input())\n```"))
    assert validate_afm(text_of(python_answer), "code", answer_format="python").ok


def test_optional_think_before_a_mas_answer():
    assert validate_afm(text_of(MAS_VALID[:-1] + [("think", "Done."), MAS_VALID[-1]]), "mas").ok


M = MAS_VALID[:4] + [MAS_VALID[11]] + MAS_VALID[21:]  # the shortest valid mas: one search, one check
C = CODE_VALID

# rule -> (variant, a text that breaks it and nothing earlier, the block index reported)
BREAKS = {
    "unclosed": ("mas", text_of(M).replace("</plan>", ""), 1),
    "nested": ("mas", text_of(replace_at(M, 1, ("plan", "p <think>x</think>"))), 1),
    "stray_close": ("mas", text_of(M).replace("</plan>", "</plan></plan>"), 2),
    "unknown_tag": ("mas", text_of(M).replace("web_search>", "wiki_search>"), 3),
    "tag_in_text": ("mas", text_of(replace_at(M, 2, ("think", "Next I call <web_search>."))), 2),
    "free_text": ("mas", text_of(M).replace("<answer>", "Final: <answer>"), 9),
    "empty": ("mas", "  \n", 0),
    "empty_block": ("mas", text_of(replace_at(M, 1, ("plan", " \n"))), 1),
    "tag_not_allowed": ("code", text_of(replace_at(C, 5, ("think", "t"), ("suggested_answer", "3"))), 6),
    "plan_first": ("mas", text_of(replace_at(M, 1, ("reflection", "r"))), 1),
    "consecutive_think": ("mas", text_of(M[:1] + M), 1),
    "think_before": ("mas", text_of(M[1:]), 0),
    "observation_after_tool": ("mas", text_of(M[:4] + M[5:]), 4),
    "orphan_observation": ("mas", text_of(M[:5] + M[4:]), 5),
    "code_sequence": ("code", text_of(C[:4] + C[5:]), 4),
    "after_suggested_answer": ("mas", text_of(M[:7] + M[9:]), 7),
    "orphan_double_check": ("mas", text_of(M[:5] + M[7:]), 6),
    "replan_after_poor": ("mas", text_of(M[:5] + [("think", "t"), ("reflection", POOR)] + M[5:]), 8),
    "double_check_score": ("mas", text_of(replace_at(M, 8, ("double_check", "Looks right."))), 8),
    "double_check_outcome": ("mas", text_of(replace_at(M, 8, ("double_check", "score: 2"))), 9),
    "answer_after_double_check": ("mas", text_of(M[:5] + M[9:]), 5),
    "ends_with_answer": ("mas", text_of(M + [("think", "t")]), 10),
    "boxed_answer": ("code", text_of(replace_at(C, 6, ("answer", "(3, pi/2)"))), 6),
    "code_answer": ("code", text_of(C), 6),  # checked as LiveCodeBench: a boxed answer is no code
    "observation_layout": ("mas", text_of(M).replace("</observation>\n\n", "</observation>\n"), 4),
    "observation_marker": ("mas", text_of(replace_at(M, 2, ("think", "Mind the <observation below."))), 2),
    "code_fence": ("code", text_of(replace_at(C, 2, ("code", "print(math.pi)"))), 2),
    "reflection_scores": ("code", text_of(replace_at(C, 4, ("reflection", "As expected.\n" + GOOD))), 4),
    "boxed_outside_answer": ("code", text_of(replace_at(C, 5, ("think", "So it is \\boxed{3}."))), 5),
    "think_scores": ("code", text_of(replace_at(C, 5, ("think", "Checking it: the sum is right (score 4/4)."))), 5),
}
_FORMATS = {"code_answer": "python"}


def test_every_rule_has_a_breaking_example():
    assert set(BREAKS) == set(RULES)


@pytest.mark.parametrize("rule", list(BREAKS))
def test_each_rule_is_reported_by_name(rule):
    variant, text, index = BREAKS[rule]
    verdict = validate_afm(text, variant, answer_format=_FORMATS.get(rule, "boxed"))
    assert (verdict.ok, verdict.rule, verdict.block_index) == (False, rule, index), verdict.message
    assert verdict.message


def test_all_violations_lists_structure_before_order():
    text = "<think>a</think> stray <web_search>q</web_search>"
    rules = [v.rule for v in all_violations(text)]
    assert rules[0] == "free_text"
    assert {"plan_first", "observation_after_tool", "ends_with_answer"} <= set(rules)


def test_blocks_carry_the_offsets_of_their_tag_spans():
    text = "\n\n" + "\n \t\n".join(markup(tag, body) for tag, body in MAS_VALID) + "\n"
    blocks = parse_blocks(text)
    assert [(b.tag, b.text) for b in blocks] == MAS_VALID
    assert all(text[b.start : b.end] == markup(b.tag, b.text) for b in blocks)
    assert scan(text).violations == []


def test_observations_are_environment_text():
    page = "<html><code>x = 1</code></html>"  # tags inside an observation are the page's, not structure
    assert validate_afm(text_of(replace_at(M, 4, ("observation", page)))).ok
    closing = "a page quoting </observation> early"
    pairs = replace_at(M, 4, ("observation", neutralize_tags(closing)))
    assert validate_afm(text_of(pairs)).ok
    assert parse_blocks(text_of(pairs))[4].body == "a page quoting &lt;/observation&gt; early"
    assert validate_afm(text_of(replace_at(M, 4, ("observation", closing)))).rule == "free_text"
    bare = "an observation>\n\nthat AFM's trainer would take for the end of the span, and <observation too"
    assert neutralize_tags(bare) == bare.replace("n>", "n&gt;").replace("<o", "&lt;o")
    assert validate_afm(text_of(replace_at(M, 4, ("observation", neutralize_tags(bare))))).ok
    assert validate_afm(text_of(replace_at(M, 4, ("observation", bare)))).rule == "observation_marker"


def test_the_layout_is_afm_s():
    text = text_of(C)
    assert text.startswith("<plan>\nConvert") and "\n</plan>\n<think>\n" in text
    assert "</think>\n<code>\n```py\nimport math\n" in text and "\n```\n</code>\n<observation>\n3.0 " in text
    assert "\n</observation>\n\n<reflection>\n" in text
    assert text.endswith("<answer>\n\\boxed{\\left(3, \\frac{\\pi}{2}\\right)}\n</answer>")
    for squeezed in ("\n<observation>", "<observation>\n", "\n</observation>"):
        assert validate_afm(text.replace(squeezed, squeezed.strip("\n")), "code").rule == "observation_layout"
    assert validate_afm(text.replace("</observation>\n\n", "</observation>\n\n\n"), "code").rule == "observation_layout"
    stdin = replace_at(C, 2, ("code", "```py\nprint(input())\n```\n```sh\n3\n```"))
    assert validate_afm(text_of(stdin), "code").ok
    assert validate_afm(text_of(C).replace("```\n</code>", "```</code>"), "code").rule == "code_fence"


def test_score_conventions_read_the_prompt_wordings():
    written = "(1) **Information Conflict**: Good\n(2) Tool Effectiveness - Average\n(3) Trajectory Monitoring: Poor"
    assert reflection_scores(written) == {
        "information_conflict": "good",
        "tool_effectiveness": "average",
        "trajectory_progress": "poor",
    }
    assert reflection_is_poor(POOR) and not reflection_is_poor(GOOD) and not reflection_is_poor("fine")
    assert reflection_scores("trajectory_progress: fair") == {"trajectory_progress": "average"}
    cases = {"score: 3": 3, "Score = 4/4": 4, "The score this time is:2": 2, "1\nall wrong": 1}
    cases.update({"1. The page agrees.\nscore: 4": 4, "score: 2\n...\nscore: 3": 3, "3 sources agree": None})
    assert {text: double_check_score(text) for text in cases} == cases


def test_single_rendering_round_trips_and_masks_observations():
    blocks = make_blocks(MAS_VALID)
    rendered = render_single("Task: a question", blocks)
    assert parse_blocks(rendered.completion) == blocks
    masked = [rendered.completion[start:end] for start, end in rendered.observation_spans]
    observations = [f"<observation>\n{text}\n</observation>\n\n" for tag, text in MAS_VALID if tag == "observation"]
    assert masked == observations  # what AFM's trainer masks: "<observation" through the blank line
    assert all(rendered.completion[start - 1] == "\n" for start, _ in rendered.observation_spans)
    kept = rendered.completion
    for start, end in reversed(rendered.observation_spans):
        kept = kept[:start] + kept[end:]
    assert "<observation>" not in kept and kept.count("<think>") == [tag for tag, _ in MAS_VALID].count("think")


def test_multiturn_rendering_joins_back_into_the_single_string():
    blocks = make_blocks(MAS_VALID)
    turns = render_multiturn("Task: a question", blocks)
    single = render_single("Task: a question", blocks)
    assert (turns[0].role, turns[0].content, turns[0].loss) == ("user", "Task: a question", False)
    assert "".join(turn.content for turn in turns[1:]) == single.completion
    tool_turns = [turn.content for turn in turns if turn.role == "tool"]
    assert tool_turns == [single.completion[a:b] for a, b in single.observation_spans]
    assert all(not t.loss for t in turns if t.role == "tool") and all(t.loss for t in turns if t.role == "assistant")
    assistant = [t.content for t in turns if t.role == "assistant"]
    assert all(a.startswith("<") and a.rstrip("\n").endswith(">") for a in assistant)
    assert [a.endswith(">\n") for a in assistant] == [True, True, True, False]  # the newline before <observation>
    assert [t.kind for t in turns if t.role == "assistant"] == ["tool_call", "tool_call", "tool_call", "answer"]
    assert {t.role for t in render_multiturn("q", blocks, observation_role="user")} == {"user", "assistant"}


def test_the_task_prompts_demand_the_code_variant():
    pd = pytest.importorskip("pandas")
    path = TASKS / "math500.parquet"
    if not path.exists():
        pytest.skip("the shared task files are not here")
    prompt = pd.read_parquet(path).iloc[0]["prompt"][-1]["content"]
    assert "Always follow 'plan', ('think', 'code', 'observation', 'reflection')*N, 'think', 'answer'" in prompt
    assert "\\boxed{" in prompt
    turns = render_multiturn(prompt, make_blocks(CODE_VALID))
    assert turns[0].content == prompt and validate_afm("".join(t.content for t in turns[1:]), "code").ok
    code_prompt = pd.read_parquet(TASKS / "livecodebench_v5.parquet").iloc[0]["prompt"][-1]["content"]
    assert "Answer should begin with '```py" in code_prompt  # hence answer_format="python"


# Property-ish: random well-formed sequences pass; one deleted or swapped block fails.


def random_mas(rng):
    pairs = [("think", "t"), ("plan", "p")]
    rounds = rng.randint(1, 3)
    for round_ in range(rounds):
        for _ in range(rng.randint(0, 3)):
            tool = rng.choice(tool_tags())
            pairs += [("think", "t"), (tool, "```py\nq\n```" if tool == "code" else "q"), ("observation", "o")]
        if rng.random() < 0.5:
            poor = rng.random() < 0.5
            pairs += [("think", "t"), ("reflection", POOR if poor else GOOD)]
            pairs += [("think", "t"), ("plan", "p")] if poor else []
        final = round_ == rounds - 1
        score = rng.randint(3, 4) if final else rng.randint(1, 2)
        pairs += [("think", "t"), ("suggested_answer", "s"), ("think", "t"), ("double_check", double_check_text(score))]
        pairs += [("answer", "a")] if final else [("think", "t"), ("plan", "p")]
    return pairs


def random_code(rng):
    pairs = [("plan", "p")]
    for _ in range(rng.randint(0, 4)):
        pairs += [("think", "t"), ("code", "```py\nc\n```"), ("observation", "o"), ("reflection", "r")]
    return pairs + [("think", "t"), ("answer", "\\boxed{1}")]


def _kind(tag):
    return "tool" if tag in tool_tags() else tag


@pytest.mark.parametrize("variant, generate", [("mas", random_mas), ("code", random_code)])
def test_random_sequences_pass_and_single_edits_fail(variant, generate):
    rng = random.Random(20240607)
    for _ in range(60):
        pairs = generate(rng)
        assert validate_afm(text_of(pairs), variant).ok, text_of(pairs)
        for i in range(len(pairs)):
            broken = validate_afm(text_of(pairs[:i] + pairs[i + 1 :]), variant)
            assert broken.rule in RULES, (i, pairs[i])
        for i, j in _swaps_of_different_kinds(rng, pairs, 8):
            swapped = pairs[:i] + [pairs[j]] + pairs[i + 1 : j] + [pairs[i]] + pairs[j + 1 :]
            assert validate_afm(text_of(swapped), variant).rule in RULES, (i, j)


def _swaps_of_different_kinds(rng, pairs, count):
    """Swapping two tool calls (or two blocks of one tag) can leave a valid sequence, so skip those."""
    swaps = [(i, j) for i in range(len(pairs)) for j in range(i + 1, len(pairs))]
    swaps = [(i, j) for i, j in swaps if _kind(pairs[i][0]) != _kind(pairs[j][0])]
    return rng.sample(swaps, min(count, len(swaps)))
