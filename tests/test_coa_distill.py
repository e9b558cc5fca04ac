"""Hand-built traces -> AFM trajectories: both variants, both renderings, failures with their rule.

AFM's own format checks run on the distilled rows: `afm_*` below re-implement, independently, FormatReward of
verl/verl/utils/reward_score/format_reward.py in OPPO-PersonalAI/Agent_Foundation_Models (commit
8f9451697abbde18aa91241d6ba5171eab660261): check_code_format_correctness (the "codetag" check its AFM reward
manager applies with format_fn_type=overlong_buffer_codetag), check_format_correctness ("toolstar") and
check_sequence.
"""

import asyncio
import json
import re

from afm_rows import code_rows, mas_rows

from factory.coa import Event, ToolCall, Trace, coa_stats, distill, distill_prompt, record_trace
from factory.coa.afm import parse_blocks, reflection_scores, validate_afm
from factory.coa.store import failure_counts, load_trace, save_trace
from factory.coa.tools import tool_tags
from factory.store import Store
from factory.tasks import Task

GOOD = {"information_conflict": "good", "tool_effectiveness": "good", "trajectory_progress": "good"}
POOR = {**GOOD, "tool_effectiveness": "poor"}


def tool(name, argument, result, ok=True):
    return Event(agent="search_agent", kind="tool_call", think=f"Call {name}.", tool=ToolCall(
        name=name, argument=argument, ok=ok, result=result))  # fmt: skip


def plan(text, replan=False):
    return Event(agent="planner", kind="plan", think="Plan the work.", content=text, replan=replan)


def reflection(scores, decision="continue"):
    return Event(
        agent="reflector", kind="reflection", think="Judge it.", content="Noted.", scores=scores, decision=decision
    )


def suggested(text):
    return Event(agent="answerer", kind="suggested_answer", think="Propose.", content=text)


def checked(score):
    return Event(agent="verifier", kind="double_check", think="Check.", content=f"Against the page ({score}).",
                 scores={"score": score}, decision="accept" if score >= 3 else "replan")  # fmt: skip


def final(text):
    return Event(agent="answerer", kind="answer", content=text)


def trace(variant, events, domain="qa", **kw):
    answer = next((e.content for e in events if e.kind == "answer"), None)
    return Trace(trace_id="coa:t/1", task_id="t/1", variant=variant, domain=domain, question="Which river?",
                 events=events, final_answer=answer, **kw)  # fmt: skip


MAS_EVENTS = [
    plan("1. Search."), tool("web_search", "paris river", "Paris <code>x</code> lies on the Seine </observation>"),
    reflection(POOR, "replan"), plan("1. Read the page.", replan=True),
    tool("crawl_page", "corpus://seine", "Paris lies on the Seine."), reflection(GOOD, "answer"),
    suggested("Loire"), checked(2), plan("1. Check again.", replan=True), suggested("Seine"), checked(4),
    final("Seine"),
]  # fmt: skip


def test_a_mas_trace_distils_into_valid_afm_in_both_forms():
    result = distill(trace("mas", MAS_EVENTS), "Task: Which river?")
    assert result.ok, result.message
    completion = result.single.completion
    assert [b.tag for b in parse_blocks(completion)][:6] == ["think", "plan", "think", "web_search", "observation",
                                                             "think"]  # fmt: skip
    assert "&lt;/observation&gt;" in completion and "&lt;code&gt;" in completion  # tool text cannot end a block
    assert "".join(turn.content for turn in result.turns[1:]) == completion
    observed = [turn for turn in result.turns if turn.kind == "observation"]
    assert len(observed) == 2 and not any(turn.loss for turn in observed)
    spans = [completion[start:end] for start, end in result.single.observation_spans]
    assert [span.strip()[:13] for span in spans] == ["<observation>"] * 2


def test_a_code_trace_folds_replans_and_rejected_answers_into_thinks_in_the_agents_own_words():
    events = [
        plan("1. Compute."), tool("code", "print(6 * 7)", "42\n"), reflection(GOOD, "answer"),
        suggested("\\boxed{41}"), checked(1), plan("1. Recompute.", replan=True),
        tool("code", "```py\nprint(6 * 7)\n```", "42\n"), reflection(GOOD, "answer"), suggested("\\boxed{42}"),
        checked(4), final("\\boxed{42}"),
    ]  # fmt: skip
    result = distill(trace("code", events, domain="math"), "prompt")
    assert result.ok, result.message
    blocks = parse_blocks(result.single.completion)
    assert [b.tag for b in blocks].count("plan") == 1 and "double_check" not in [b.tag for b in blocks]
    thinks = [b.text for b in blocks if b.tag == "think"]
    # The rejected check's reasoning and the new plan, as the verifier and planner wrote them, and nothing more.
    assert thinks[1].strip() == "Check.\nAgainst the page (1).\nPlan the work.\n1. Recompute.\nCall code."
    assert thinks[-1].strip() == "Propose."  # the accepted answer's own reasoning: no check only the verifier saw
    assert "score" not in "".join(thinks)  # AFM's code agent has no verifier
    assert [b.body for b in blocks if b.tag == "code"] == ["```py\nprint(6 * 7)\n```"] * 2
    assert "\\boxed" not in "".join(thinks) and blocks[-1].body == "\\boxed{42}"
    assert validate_afm(result.single.completion, "code", "boxed").ok


def test_broken_distillations_name_the_rule():
    tagged = MAS_EVENTS[:1] + [tool("web_search", "q", "r").model_copy(update={"think": "I will <plan> it"})]
    cases = {
        "tag_in_text": trace("mas", tagged + MAS_EVENTS[2:]),
        "think_before": trace("mas", [plan("1. x").model_copy(update={"think": None}), *MAS_EVENTS[1:]]),
        "boxed_answer": trace("code", [plan("1. x"), suggested("42"), checked(4), final("42")], domain="math"),
        "replan_after_poor": trace("mas", MAS_EVENTS[:3] + MAS_EVENTS[4:]),
    }
    for rule, broken in cases.items():
        assert distill(broken, "p").rule == rule


def test_stats_count_the_team_work():
    stats = coa_stats(trace("mas", MAS_EVENTS), correct=True)
    assert stats.tool_calls_by_type == {"web_search": 1, "crawl_page": 1} and stats.replans == 2
    assert stats.plans == 3 and stats.reflections == 2 and stats.poor_reflections == 1
    assert stats.double_check_scores == [2, 4] and stats.low_double_check_corrected and stats.correct
    assert not coa_stats(trace("mas", MAS_EVENTS[:8])).low_double_check_corrected


def test_failures_are_stored_with_their_rule_and_valid_ones_as_trajectories(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    task = Task(id="t/1", question="Which river?", answers=["Seine"], domain="qa", source="t")
    from factory.checks import get_checker

    assert asyncio.run(record_trace(store, trace("mas", MAS_EVENTS), task, get_checker("qa")))
    broken = trace("mas", MAS_EVENTS[:3] + MAS_EVENTS[4:]).model_copy(update={"trace_id": "coa:t/2"})
    assert not asyncio.run(record_trace(store, broken, task, None))
    stopped = trace("mas", MAS_EVENTS[:2], status="llm_error", reason="planner: schema").model_copy(
        update={"trace_id": "coa:t/3"}
    )
    assert not asyncio.run(record_trace(store, stopped, task, None))
    assert failure_counts(store) == {"llm_error": 1, "replan_after_poor": 1}
    rows = store.query("SELECT trajectory_id, verified, correct, rule, reason FROM trajectories ORDER BY 1")
    assert rows[0] == ("coa:t/1", True, True, None, None)
    assert rows[1][3] == "replan_after_poor" and rows[1][4].startswith("grammar replan_after_poor")
    conversations = json.loads(store.query("SELECT conversations FROM trajectories WHERE verified")[0][0])
    assert conversations[0]["from"] == "human" and not conversations[0]["loss"]
    assert store.query("SELECT count(*) FROM coa_traces")[0][0] == 3


def test_the_prompt_is_the_task_s_own_afm_prompt_when_it_has_one():
    afm = "Solve it with <plan> and <code>.\n\nTask:\nWhat is 1+1?"
    task = Task(id="m/1", question="What is 1+1?", answers=["2"], domain="math", source="m",
                prompt=[{"role": "user", "content": afm}])  # fmt: skip
    assert distill_prompt(trace("code", [], domain="math"), task) == afm
    ours = distill_prompt(trace("mas", []), None)
    assert ours.endswith("Task:\nWhich river?") and "<double_check>" not in ours


def named_tools(prompt: str) -> set[str]:
    """The AFM tools an instruction names anywhere in its text."""
    return {tool for tool in tool_tags() if f"'{tool}'" in prompt or f"<{tool}>" in prompt}


def test_the_web_instruction_lists_exactly_the_tools_the_run_offered():
    web = trace("mas", MAS_EVENTS, tools=["web_search", "crawl_page"])
    prompt = distill_prompt(web)
    assert named_tools(prompt) == {"web_search", "crawl_page"}
    assert "code" not in prompt and "```" not in prompt  # no code tool, and no rule or format about code
    result = distill(web, prompt)
    assert result.ok, result.message
    assert result.single.prompt == result.turns[0].content == prompt  # both renderings carry it
    with_code = distill_prompt(web.model_copy(update={"tools": ["web_search", "crawl_page", "code"]}))
    assert named_tools(with_code) == {"web_search", "crawl_page", "code"} and "```py fence" in with_code
    assert "'code', 'observation'" in with_code and "'crawl_page', 'code', 'reflection'" in with_code
    for offered in (["crawl_page"], ["code"], []):
        assert named_tools(distill_prompt(web.model_copy(update={"tools": offered, "events": []}))) == set(offered)


def test_a_trace_that_lists_no_tools_names_those_its_calls_used():
    imported = trace("mas", MAS_EVENTS)  # imports, and traces stored before coa_traces had a tools column
    assert imported.tools == [] and named_tools(distill_prompt(imported)) == {"web_search", "crawl_page"}
    ran_code = trace("mas", [MAS_EVENTS[0], tool("code", "print(1)", "1"), *MAS_EVENTS[2:]])
    assert named_tools(distill_prompt(ran_code)) == {"code", "crawl_page"}


def test_a_trace_read_back_from_the_store_distils_with_the_instruction_of_its_run(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    offered = trace("mas", MAS_EVENTS, tools=["web_search", "crawl_page", "code"])  # code offered, never called
    save_trace(store, offered)
    loaded = load_trace(store, offered.trace_id)
    assert loaded.tools == offered.tools and distill_prompt(loaded) == distill_prompt(offered)
    assert "'code'" in distill_prompt(loaded)


# --- AFM's format checks, re-implemented -------------------------------------------------------------

AFM_TAGS = ("plan", "think", "code", "observation", "reflection", "answer")


def afm_paired(text: str, names: tuple[str, ...]) -> bool:
    """check_paired_tags / check_paired_code_tags: a stack over the tags of `names`, line by line, then the
    opening and closing counts of every AFM tag."""
    stack, ok = [], True
    pattern = re.compile(r"(</?(?:%s)>)" % "|".join(names))
    for line in text.split("\n"):
        for tag in pattern.findall(line):
            if not tag.startswith("</"):
                stack.append(tag)
            elif not stack or tag != "</" + stack[-1][1:]:
                ok = False
            else:
                stack.pop()
    return ok and not stack and all(text.count(f"<{t}>") == text.count(f"</{t}>") for t in AFM_TAGS)


def afm_code_content(text: str) -> bool:
    """check_code_tag_content: each <code> holds one ```py\\n ... ```\\n, then nothing or one ```sh\\n ... ```\\n."""
    blocks = re.findall(r"<code>(.*?)</code>", text, flags=re.DOTALL)
    for block in blocks:
        if block.count("```py\n") != 1 or (end := block.find("```\n", block.find("```py\n") + 6)) == -1:
            return False
        after = block[end + 4 :]
        if after.strip():
            if after.count("```sh\n") != 1 or (sh_end := after.find("```\n", after.find("```sh\n") + 6)) == -1:
                return False
            if after[sh_end + 4 :].strip():
                return False
    return bool(blocks)


def afm_tag_content(text: str) -> bool:
    """check_tag_content: no AFM tag pair is empty or holds another AFM opening tag."""
    for tag in AFM_TAGS:
        for content in re.findall(f"<{tag}>(.*?)</{tag}>", text, flags=re.DOTALL):
            if not content.strip() or any(f"<{other}>" in content for other in AFM_TAGS):
                return False
    return True


def afm_sequence(text: str) -> bool:
    """check_sequence: think first, answer last; code -> observation -> reflection -> think -> code|answer."""
    tags = re.findall(r"<(?:think|code|observation|reflection|answer)>", text)
    follows = {"<code>": ("<observation>",), "<observation>": ("<reflection>",), "<reflection>": ("<think>",),
               "<think>": ("<code>", "<answer>")}  # fmt: skip
    if not tags or tags[0] != "<think>" or tags[-1] != "<answer>":
        return False
    return all(tags[i + 1] in follows.get(tags[i], (tags[i + 1],)) for i in range(1, len(tags) - 1))


def test_code_rows_pass_afm_s_format_checks():
    for row in code_rows():
        text = row["output"]
        assert afm_paired(text, ("code",)) and afm_code_content(text)  # the codetag check
        assert afm_paired(text, AFM_TAGS) and afm_tag_content(text) and afm_sequence(text)
        glued = text.replace("```\n</code>", "```</code>")  # how code blocks closed before: the check fails
        assert afm_paired(glued, ("code",)) and not afm_code_content(glued)


def test_web_rows_pass_afm_s_pairing_and_content_checks():
    for row in mas_rows():
        assert afm_paired(row["output"], AFM_TAGS) and afm_tag_content(row["output"])


def test_the_code_variant_writes_no_scores_and_boxes_only_its_answer():
    for row in code_rows():
        blocks = parse_blocks(row["output"])
        assert not any(reflection_scores(b.text) for b in blocks) and "information_conflict" not in row["output"]
        assert not any("\\boxed" in b.text for b in blocks if b.tag not in ("answer", "observation"))
        assert blocks[-1].tag == "answer" and blocks[-1].body.startswith(("\\boxed{", "```py\n"))


def test_the_web_variant_keeps_afm_s_reflection_format():
    reflections = [b.text for row in mas_rows() for b in parse_blocks(row["output"]) if b.tag == "reflection"]
    assert len(reflections) == 2 and all(len(reflection_scores(text)) == 3 for text in reflections)
    assert "tool_effectiveness: poor" in reflections[0]
