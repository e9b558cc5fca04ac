"""The LLM roles of the multi-agent system (factory.llm.role): prompt, reply type, parse (no I/O, DESIGN rule 6).

Every role gets one system message (prompts/coa/<role>.md, then
prompts/coa/voice.md) and one user message (prompts/coa/context.md: the
question, the current plan, the work so far and the answer format), and
replies with a small JSON object whose strings and lists are bounded, so a
small model cannot return an empty plan or ramble. `parse` turns the reply
into a trace `Event`; the caller adds timing and usage.

The roles' text becomes one agent's trajectory, so no prompt tells a role it is
one of several: each writes as the one solver of the task (voice.md). A prompt
names exactly the tools the run offers (one line each, prompts/coa/tools/) and
the modules the code tool's sandbox allows, both passed in by the run.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

from ..llm import Request
from ..llm.role import Role, chat
from ..prompts import load_prompt, render_prompt
from .config import ReplyLimits
from .tools.registry import spec as tool_spec
from .trace import Event, Evidence, ToolCall

Rating = Literal["good", "average", "poor"]
Think = Annotated[str, StringConstraints(min_length=1, max_length=800)]
Step = Annotated[str, StringConstraints(min_length=1, max_length=240)]
Claim = Annotated[str, StringConstraints(min_length=1, max_length=300)]
MAX_PLAN_STEPS = 12  # a hard task's plan: a lookup, a page or a program per step, and the checks
ANSWER_FORMATS = {  # what the answerer is told, by task domain
    "math": "the final answer only, as LaTeX inside \\boxed{...}",
    "code": "a complete Python program in one ```py block that reads stdin and prints the answer",
    "qa": "the answer alone: the name, number or short phrase asked for, with no unit, explanation or other name",
}
# AFM's reflection line is `information_conflict: good` (good: no conflict). The agent is asked for
# consistency instead, so that every scale reads one way (good is the best case); distill.py writes AFM's name.
RATINGS = {
    "consistency": "information_conflict",
    "tool_effectiveness": "tool_effectiveness",
    "trajectory_progress": "trajectory_progress",
}


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanReply(Reply):
    think: Think
    steps: list[Step] = Field(min_length=1, max_length=MAX_PLAN_STEPS)


class SearchReply(Reply):
    think: Think
    tool: Literal["web_search", "crawl_page"]
    argument: str = Field(min_length=1, max_length=300, description="the query, or the URL / corpus:// id to read")


class CodeReply(Reply):
    think: Think
    code: str = Field(min_length=1, max_length=3000, description="Python that prints what it finds")


class ReflectionReply(Reply):
    think: Think
    comment: str = Field(min_length=1, max_length=600, description="what the result showed, with its names and values")
    step: Literal["done", "retry", "drop", "replan"] = Field(description="what becomes of the step the call was for")
    also_settled: list[int] = Field(
        default_factory=list, max_length=MAX_PLAN_STEPS, description="other open steps this result already settles"
    )
    consistency: Rating
    tool_effectiveness: Rating
    trajectory_progress: Rating


class EvidenceItem(Reply):
    claim: Claim
    call: int = Field(ge=1, le=100, description="the number of the call whose result shows the claim")


class AnswerReply(Reply):
    think: Think
    answer: str = Field(min_length=1, max_length=4000)
    evidence: list[EvidenceItem] = Field(min_length=1, max_length=8)


class CheckReply(Reply):
    think: Think
    comment: str = Field(min_length=1, max_length=600)
    score: int = Field(
        ge=1, le=4, description="1 surely wrong, 2 not yet shown, 3 shown by the results, 4 cross-checked"
    )
    check: str = Field(max_length=300, description="with a score <= 2: one tool check that would settle it, or empty")


SEARCH_ARGUMENT_CHARS = 300  # a query or a URL


@lru_cache(maxsize=None)
def bounded_reply(base: type[Reply], limits: ReplyLimits, tools: tuple[str, ...] = ()) -> type[Reply]:
    """`base` with its free-text fields capped by `limits` and, for a tool agent, its
    `tool` choice narrowed to `tools` (the argument may then be a program). A bound left auto
    here (no run to say which model) takes the full-model size."""
    limits = limits.resolved(False)
    fields: dict[str, Any] = {}
    for name, info in base.model_fields.items():
        if name in ReplyLimits.model_fields:
            bounded = Annotated[str, StringConstraints(min_length=1, max_length=getattr(limits, name))]
            fields[name] = (bounded, Field(description=info.description))
    if "steps" in base.model_fields:  # a small model given room for 12 steps writes 12, and runs out of tokens
        fields["steps"] = (list[Step], Field(min_length=1, max_length=limits.plan_steps))
    if tools and "tool" in base.model_fields:
        argument_chars = limits.code if "code" in tools else SEARCH_ARGUMENT_CHARS
        fields["tool"] = (Literal[tools], ...)
        described = ", or ".join(argument_of(tool) for tool in tools)  # the schema names no tool not offered
        # A program when code is offered: marked as code, the LaTeX repair (factory.llm) leaves its escapes alone.
        code = {"contentMediaType": "text/x-python"} if "code" in tools else None
        fields["argument"] = (
            str,
            Field(min_length=1, max_length=argument_chars, description=described, json_schema_extra=code),
        )
    return create_model(base.__name__, __base__=base, **fields)


def argument_of(tool: str) -> str:
    """What a tool's argument is, as its declaration says (an imported tool's own name when undeclared)."""
    declared = tool_spec(tool)
    return declared.argument if declared else tool


class CoaRole(Role):
    """One role of the system (factory.llm.role): `request(context)` -> Request; `parse(reply, domain)` -> Event.

    `tools`: the tools the run offers its tool agent (the search agent may choose
    among them); `modules`: what the code tool lets a program import. `response_model`:
    `reply_type` bounded by the run's limits and narrowed to its tools (bounded_reply)."""

    reply_type: ClassVar[type[Reply]]

    def __init__(self, limits: ReplyLimits | None = None, tools: tuple[str, ...] = (), modules: tuple[str, ...] = ()):
        self.tools = tools
        self.modules = modules
        self.limits = (limits or ReplyLimits()).resolved(False)
        self.response_model = bounded_reply(self.reply_type, self.limits, tools)

    def request(self, question: str, plan: str, history: str, domain: str, tag: str, focus: str = "") -> Request:
        """`focus`: the line naming the plan step this call is about (tool agents, reflector), else empty."""
        user = render_prompt(
            "coa/context",
            question=question,
            plan=plan or "(no plan yet)",
            history=history or "(nothing yet)",
            answer_format=ANSWER_FORMATS[domain],
            focus=f"{focus}\n" if focus else "",
        )
        return Request(chat(self.system_prompt(), user), self.response_model, stage=f"coa_{self.name}", tag=tag)

    def system_prompt(self) -> str:
        modules = ", ".join(self.modules) or "(none: the standard library is closed)"
        tool_lines = "\n".join(render_prompt(f"coa/tools/{tool}", modules=modules) for tool in self.tools)
        role = render_prompt(f"coa/{self.name}", tools=tool_lines, tool_names=" or ".join(self.tools), modules=modules,
                             max_plan_steps=self.limits.plan_steps)  # fmt: skip
        return f"{role}\n{load_prompt('coa/voice')}"


class Planner(CoaRole):
    name, reply_type = "planner", PlanReply

    def parse(self, reply: PlanReply, domain: str) -> Event:
        steps = "\n".join(f"{i}. {' '.join(step.split())}" for i, step in enumerate(reply.steps, 1))
        return Event(agent=self.name, kind="plan", think=reply.think.strip(), content=steps)


class SearchAgent(CoaRole):
    name, reply_type = "search_agent", SearchReply

    def parse(self, reply: SearchReply, domain: str) -> Event:
        call = ToolCall(name=reply.tool, argument=reply.argument.strip(), ok=False, result="")
        return Event(agent=self.name, kind="tool_call", think=reply.think.strip(), tool=call)


class CodeAgent(CoaRole):
    name, reply_type = "code_agent", CodeReply

    def parse(self, reply: CodeReply, domain: str) -> Event:
        call = ToolCall(name="code", argument=reply.code, ok=False, result="")  # the loop runs it and fills these
        return Event(agent=self.name, kind="tool_call", think=reply.think.strip(), tool=call)


class Reflector(CoaRole):
    name, reply_type = "reflector", ReflectionReply

    def parse(self, reply: ReflectionReply, domain: str) -> Event:
        scores = {afm: getattr(reply, ours) for ours, afm in RATINGS.items()}
        # A poor rating asks for a new plan (AFM's rule), whatever the step's outcome says.
        decision = "replan" if "poor" in scores.values() else reply.step
        return Event(agent=self.name, kind="reflection", think=reply.think.strip(), content=reply.comment.strip(),
                     scores=scores, decision=decision, settles=sorted(set(reply.also_settled)))  # fmt: skip


class Answerer(CoaRole):
    name, reply_type = "answerer", AnswerReply

    def parse(self, reply: AnswerReply, domain: str) -> Event:
        evidence = [Evidence(claim=" ".join(item.claim.split()), call=item.call) for item in reply.evidence]
        return Event(agent=self.name, kind="suggested_answer", think=reply.think.strip(),
                     content=formatted_answer(reply.answer, domain), evidence=evidence)  # fmt: skip


class Verifier(CoaRole):
    name, reply_type = "verifier", CheckReply

    def parse(self, reply: CheckReply, domain: str) -> Event:
        check = " ".join(reply.check.split())
        decision = "accept" if reply.score >= 3 else "check" if check else "replan"
        return Event(agent=self.name, kind="double_check", think=reply.think.strip(), content=reply.comment.strip(),
                     scores={"score": reply.score}, decision=decision, check=check or None)  # fmt: skip


def formatted_answer(answer: str, domain: str) -> str:
    """The answer in the form its checker and the AFM grammar want: \\boxed{} for math, a
    ```py fence for code. Models often give the bare value; the form is ours to add."""
    text = answer.strip()
    if domain == "math" and "\\boxed{" not in text:
        return f"\\boxed{{{text.strip('$ ')}}}"
    if domain == "code" and "```" not in text:
        return f"```py\n{text}\n```"
    return text


ROLE_TYPES: dict[str, type[CoaRole]] = {
    role.name: role for role in (Planner, SearchAgent, CodeAgent, Reflector, Answerer, Verifier)
}
