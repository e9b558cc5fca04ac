"""The LLM roles of the multi-agent system: template, response model, parse (no I/O, DESIGN rule 6).

Every role gets one system message (prompts/coa/<role>.md) and one user
message (prompts/coa/context.md: the question, the current plan, the work so
far and the answer format), and replies with a small JSON object whose strings
and lists are bounded, so a small model cannot return an empty plan or ramble.
`parse` turns the reply into a trace `Event`; the caller adds timing and usage.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..llm import Request
from ..prompts import load_prompt, render_prompt
from .trace import Event, ToolCall

Rating = Literal["good", "average", "poor"]
Think = Annotated[str, StringConstraints(min_length=1, max_length=800)]
Step = Annotated[str, StringConstraints(min_length=1, max_length=240)]
ANSWER_FORMATS = {  # what the answerer is told, by task domain
    "math": "the final answer only, as LaTeX inside \\boxed{...}",
    "code": "a complete Python program in one ```py block that reads stdin and prints the answer",
    "qa": "a short answer: a name, a number or a phrase of a few words",
}


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanReply(Reply):
    think: Think
    steps: list[Step] = Field(min_length=1, max_length=6)


class SearchReply(Reply):
    think: Think
    tool: Literal["web_search", "crawl_page"]
    argument: str = Field(min_length=1, max_length=300, description="the query, or the URL / corpus:// id to read")


class CodeReply(Reply):
    think: Think
    code: str = Field(min_length=1, max_length=3000, description="Python that prints what it finds")


class ReflectionReply(Reply):
    think: Think
    comment: str = Field(min_length=1, max_length=600)
    information_conflict: Rating
    tool_effectiveness: Rating
    trajectory_progress: Rating
    ready_to_answer: bool


class AnswerReply(Reply):
    think: Think
    answer: str = Field(min_length=1, max_length=4000)


class CheckReply(Reply):
    think: Think
    comment: str = Field(min_length=1, max_length=600)
    score: int = Field(ge=1, le=4, description="1: surely wrong ... 4: surely right")


class Role:
    """One role: `request(context)` -> Request; `parse(reply, domain)` -> Event."""

    name: ClassVar[str]
    response_model: ClassVar[type[Reply]]

    def request(self, question: str, plan: str, history: str, domain: str, tag: str) -> Request:
        user = render_prompt(
            "coa/context", question=question, plan=plan or "(no plan yet)", history=history or "(nothing yet)",
            answer_format=ANSWER_FORMATS[domain],
        )  # fmt: skip
        messages = [{"role": "system", "content": load_prompt(f"coa/{self.name}")}, {"role": "user", "content": user}]
        return Request(messages, self.response_model, stage=f"coa_{self.name}", tag=tag)

    def parse(self, reply: Reply, domain: str) -> Event:
        raise NotImplementedError


class Planner(Role):
    name, response_model = "planner", PlanReply

    def parse(self, reply: PlanReply, domain: str) -> Event:
        steps = "\n".join(f"{i}. {step.strip()}" for i, step in enumerate(reply.steps, 1))
        return Event(agent=self.name, kind="plan", think=reply.think.strip(), content=steps)


class SearchAgent(Role):
    name, response_model = "search_agent", SearchReply

    def parse(self, reply: SearchReply, domain: str) -> Event:
        call = ToolCall(name=reply.tool, argument=reply.argument.strip(), ok=False, result="")
        return Event(agent=self.name, kind="tool_call", think=reply.think.strip(), tool=call)


class CodeAgent(Role):
    name, response_model = "code_agent", CodeReply

    def parse(self, reply: CodeReply, domain: str) -> Event:
        call = ToolCall(name="code", argument=reply.code, ok=False, result="")  # the loop runs it and fills these
        return Event(agent=self.name, kind="tool_call", think=reply.think.strip(), tool=call)


class Reflector(Role):
    name, response_model = "reflector", ReflectionReply

    def parse(self, reply: ReflectionReply, domain: str) -> Event:
        scores = {name: getattr(reply, name) for name in ("information_conflict", "tool_effectiveness",
                                                          "trajectory_progress")}  # fmt: skip
        poor = "poor" in scores.values()
        decision = "replan" if poor else "answer" if reply.ready_to_answer else "continue"
        return Event(agent=self.name, kind="reflection", think=reply.think.strip(), content=reply.comment.strip(),
                     scores=scores, decision=decision)  # fmt: skip


class Answerer(Role):
    name, response_model = "answerer", AnswerReply

    def parse(self, reply: AnswerReply, domain: str) -> Event:
        return Event(agent=self.name, kind="suggested_answer", think=reply.think.strip(),
                     content=formatted_answer(reply.answer, domain))  # fmt: skip


class Verifier(Role):
    name, response_model = "verifier", CheckReply

    def parse(self, reply: CheckReply, domain: str) -> Event:
        decision = "accept" if reply.score >= 3 else "replan"
        return Event(agent=self.name, kind="double_check", think=reply.think.strip(), content=reply.comment.strip(),
                     scores={"score": reply.score}, decision=decision)  # fmt: skip


def formatted_answer(answer: str, domain: str) -> str:
    """The answer in the form its checker and the AFM grammar want: \\boxed{} for math, a
    ```py fence for code. Models often give the bare value; the form is ours to add."""
    text = answer.strip()
    if domain == "math" and "\\boxed{" not in text:
        return f"\\boxed{{{text.strip('$ ')}}}"
    if domain == "code" and "```" not in text:
        return f"```py\n{text}\n```"
    return text


ROLE_TYPES: dict[str, type[Role]] = {role.name: role for role in (Planner, SearchAgent, CodeAgent, Reflector,
                                                                  Answerer, Verifier)}  # fmt: skip
