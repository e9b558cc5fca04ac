"""Trace -> one single-agent trajectory in AFM tags, validated by the grammar.

`distill(trace, prompt)` lays the events out as AFM blocks in AFM's layout
(docs/afm_format.md), renders them both ways (one prompt + one completion with
observation spans; and multi-turn, with observations as their own loss=false
turns) and validates the completion.

The `mas` variant (AFM's web agent) maps event by event: each agent's
reasoning becomes the `<think>` before its block, a tool call becomes the tool
tag plus its `<observation>`, reflections and double checks carry their scores
in the conventions of `afm.scores`.

The `code` variant (AFM's code agent) allows one plan and no suggested answer
or double check (``plan, (think, code, observation, reflection)*N, think,
answer``), so the multi-agent work those tags would carry is folded into the
next `<think>`, in the agents' own words and nothing else: a re-plan is the
planner's reasoning and its steps, a rejected answer the check's reasoning and
comment, and the reasoning before the answer is the answerer's. The code agent writes no scores: its reflection is the
reflector's reasoning (its comment only restates the finding for the agents'
history), without the web agent's score lines, and
`\\boxed{}` appears only in the answer (a boxed value quoted in a think or
reflection is written bare). Code is fenced as AFM writes it (```` ```py ````,
then ```` ```sh ```` with the stdin when there is one); the answer is
``\\boxed{...}`` alone for math, one ```` ```py ```` block for code tasks.

The instruction (`distill_prompt`) names exactly the tools the run offered
(`Trace.offered_tools`): the web prompt's function list, its think-before list
and its tool lines (prompts/coa/afm_tools/) are rendered from them, so a web run
without the code tool says nothing of code.

Tool output is environment text: tag strings in it are neutralised. The
agents' own text is left as written; tag strings in it break `tag_in_text`,
and the distillation is stored as a failure naming that rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checks.extract import BOXED, CODE_FENCE, PYTHON_FENCES, balanced, last_boxed
from ..prompts import load_prompt, render_prompt
from ..records import Turn
from ..tasks import Task
from .afm import (
    Block,
    RenderedSingle,
    double_check_text,
    make_blocks,
    neutralize_tags,
    reflection_text,
    render_multiturn,
    render_single,
    validate_afm,
)
from .tools.registry import tool_tags
from .trace import Event, Trace

Pairs = list[tuple[str, str]]


@dataclass
class Distillation:
    ok: bool
    rule: str | None  # the first grammar rule broken (None when ok)
    message: str
    prompt: str
    blocks: list[Block]
    single: RenderedSingle
    turns: list[Turn] = field(default_factory=list)


def answer_format(variant: str, domain: str | None) -> str:
    if variant != "code":
        return "any"
    return {"math": "boxed", "code": "python"}.get(domain or "", "any")


def distill_prompt(trace: Trace, task: Task | None = None) -> str:
    """The task's own AFM prompt when it has one for this variant, else ours (prompts/coa/afm_*.md),
    naming exactly the tools the run offered."""
    if task is not None and task.prompt and trace.variant == "code":
        users = [m for m in task.prompt if m.get("role") == "user" and isinstance(m.get("content"), str)]
        if users and "<plan>" in users[-1]["content"]:
            return users[-1]["content"]
    return render_prompt(f"coa/afm_{trace.variant}", question=trace.question, **tool_values(trace))


def tool_values(trace: Trace) -> dict[str, str]:
    """The parts of the web prompt that name tools: the function list, the functions a think comes
    before, and one line per tool (prompts/coa/afm_tools/). Tools outside AFM's tag set are left out:
    a row that calls one breaks the grammar anyway (`unknown_tag`)."""
    offered = set(trace.offered_tools())
    tools = [tool for tool in tool_tags() if tool in offered]
    lines = [load_prompt(f"coa/afm_tools/{tool}") for tool in tools] or [load_prompt("coa/afm_tools/none")]
    observed = [*tools, "observation"] if tools else []
    return {
        "functions": quoted(["think", "plan", *observed, "reflection", "suggested_answer", "double_check", "answer"]),
        "think_before": quoted(["plan", *tools, "reflection", "suggested_answer", "double_check"]),
        "tools": "\n".join(lines),
    }


def quoted(names: list[str]) -> str:
    """'a', 'b' and 'c'."""
    items = [f"'{name}'" for name in names]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def distill(trace: Trace, prompt: str) -> Distillation:
    pairs = mas_pairs(trace.events) if trace.variant == "mas" else code_pairs(trace.events, trace.domain)
    blocks = make_blocks(pairs)
    single = render_single(prompt, blocks)
    verdict = validate_afm(single.completion, trace.variant, answer_format(trace.variant, trace.domain))
    return Distillation(
        verdict.ok, verdict.rule, verdict.message, prompt, blocks, single, render_multiturn(prompt, blocks)
    )


def with_think(think: str | None, block: tuple[str, str]) -> Pairs:
    """A block with the reasoning before it; none when the agent gave none (the grammar decides)."""
    return [("think", think.strip()), block] if think and think.strip() else [block]


def tool_blocks(event: Event) -> Pairs:
    call = event.tool
    argument = code_body(call.argument, call.meta.get("stdin")) if call.name == "code" else call.argument
    return [(call.name, argument), ("observation", neutralize_tags(call.result))]


def code_body(code: str, stdin: object = None) -> str:
    """The code (and stdin) in AFM's fences, whatever fences the agent used."""
    fences = [(lang.lower(), text) for lang, text in CODE_FENCE.findall(code)]
    program = next((text for lang, text in fences if lang in PYTHON_FENCES), None)
    given = next((text for lang, text in fences if lang in ("sh", "bash")), None)
    body = f"```py\n{(code if program is None else program).strip(chr(10))}\n```"
    stdin = given if given is not None else stdin
    return body + (f"\n```sh\n{stdin.strip(chr(10))}\n```" if isinstance(stdin, str) and stdin.strip() else "")


def unboxed(text: str) -> str:
    """`\\boxed{x}` written as `x`: the code agent boxes its answer only inside <answer>."""
    out, cursor = [], 0
    for match in BOXED.finditer(text):
        content = balanced(text, match.end())
        if match.start() < cursor or content is None:
            continue
        out += [text[cursor : match.start()], content]
        cursor = match.end() + len(content) + 1
    return "".join(out) + text[cursor:]


def code_answer(content: str, domain: str | None) -> str:
    """The answer as AFM's code agent writes it: `\\boxed{...}` alone (math) or one ```py block (code)."""
    boxed = last_boxed(content) if domain == "math" else None
    if boxed is not None:
        return f"\\boxed{{{boxed}}}"
    programs = [text for lang, text in CODE_FENCE.findall(content) if lang.lower() in PYTHON_FENCES]
    return f"```py\n{programs[-1].strip(chr(10))}\n```" if domain == "code" and programs else content


def check_text(event: Event) -> str:
    return double_check_text(int(event.scores.get("score", 0)), event.content or "")


def mas_pairs(events: list[Event]) -> Pairs:
    pairs: Pairs = []
    for event in events:
        if event.kind == "plan":
            pairs += with_think(event.think, ("plan", event.content or ""))
        elif event.kind == "tool_call" and event.tool is not None:
            call, observation = tool_blocks(event)
            pairs += with_think(event.think, call) + [observation]
        elif event.kind == "reflection":
            pairs += with_think(event.think, ("reflection", reflection_text(event.scores, event.content or "")))
        elif event.kind == "suggested_answer":
            pairs += with_think(event.think, ("suggested_answer", event.content or ""))
        elif event.kind == "double_check":
            pairs += with_think(event.think, ("double_check", check_text(event)))
        elif event.kind == "answer":
            pairs += with_think(event.think, ("answer", event.content or ""))
    return pairs


def code_pairs(events: list[Event], domain: str | None = None) -> Pairs:
    pairs: Pairs = []
    carried: list[str] = []  # work the code grammar has no tag for, told in the next <think>
    suggested: Event | None = None
    for event in events:
        if event.kind == "plan" and not any(tag == "plan" for tag, _ in pairs):
            pairs.append(("plan", unboxed(event.content or "")))
        elif event.kind == "plan":
            carried += [event.think or "", event.content or ""]  # the new plan, in the planner's own words
        elif event.kind == "tool_call" and event.tool is not None:
            call, observation = tool_blocks(event)
            pairs += with_think(unboxed(joined(carried, event.think)), call) + [observation]
            carried = []
        elif event.kind == "reflection":
            # The reasoning alone: the comment restates the finding for the agents' history, and the
            # observation it comes from is right above.
            pairs.append(("reflection", unboxed((event.think or "").strip() or (event.content or ""))))
        elif event.kind == "suggested_answer":
            suggested = event
        elif event.kind == "double_check":
            carried += checked_answer_notes(suggested, event)
        elif event.kind == "answer":
            answer = ("answer", code_answer(event.content or "", domain))
            pairs += with_think(unboxed(joined(carried, event.think)), answer)
    return pairs


def checked_answer_notes(suggested: Event | None, check: Event) -> list[str]:
    """A double check folded into the code agent's next think, in the agents' own words only: the accepted
    answer's reasoning, or the check's reasoning when it rejected the answer (AFM's code agent writes no
    verifier scores, rule `think_scores`, and no words of the distiller's own)."""
    if check.decision == "accept":
        return [suggested.think or ""] if suggested is not None else []
    return [check.think or "", check.content or ""]


def joined(parts: list[str], last: str | None) -> str:
    return "\n".join(part.strip() for part in [*parts, last or ""] if part and part.strip())
