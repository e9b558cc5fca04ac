"""The LLM roles that turn a math or code seed task into a harder variant (factory.llm.role, DESIGN rule 6).

A capable model settles an easy math or code task in one or two tool calls; the
trajectories a trainer keeps need tasks whose answer takes computation to check.
These roles ask for such a variant *and the program that decides it*, never for
the answer itself: the writer's own guess (`claimed_answer`) is recorded and
compared, while the ground truth is what the program prints in the sandbox
(factory/synth/math_code.py runs it).

- `MathVariantRole`: a parameter sweep or a "verify for every n up to N" question,
  plus one program that reads a line of parameters from stdin and prints one
  number. The same program gets two lines: the variant's parameters and the
  seed's, so that reproducing the seed's known answer tests the program's core.
- `CodeVariantRole`: the seed's problem with the same input and output format and
  a stated change (tighter limits, the cases it must also handle), a reference
  solution, and new hidden test inputs: literal ones and, optionally, a generator
  program for inputs too large to write out.

Prompts: prompts/synth/{math,code}_variant_{system,user}.md. Every string and list
of a reply is bounded, so a small model cannot ramble or return nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..llm import Request
from ..llm.role import Role, chat
from ..prompts import load_prompt, render_prompt
from ..tasks import Task

STAGE = "synth_math_code"
PYTHON = {"contentMediaType": "text/x-python"}  # marked as code: factory.llm's LaTeX repair leaves its escapes alone
Think = Annotated[str, StringConstraints(min_length=1, max_length=800)]
TestInput = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
SEED_ANSWER_CHARS = 200  # the seed's reference answer, as the writer sees it


def program(description: str, max_chars: int, min_chars: int = 1):
    """A field holding a Python program, bounded and marked as code."""
    return Field(min_length=min_chars, max_length=max_chars, description=description, json_schema_extra=PYTHON)


class MathVariantReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    think: Think
    kind: Literal["sweep", "verify"]
    question: str = Field(min_length=20, max_length=1500, description="the new question, self-contained")
    steps: int = Field(ge=2, le=20, description="computation steps a solver needs to reach the answer")
    program: str = program("reads one line of parameters from stdin, prints the answer on one line", 3000)
    variant_input: str = Field(min_length=1, max_length=200, description="the stdin line for the new question")
    seed_input: str = Field(min_length=1, max_length=200, description="the stdin line for the original question")
    claimed_answer: str = Field(min_length=1, max_length=100, description="the answer you expect the program to print")


class CodeVariantReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    think: Think
    change: str = Field(min_length=10, max_length=600, description="what the new statement adds or changes")
    steps: int = Field(ge=2, le=20, description="steps a solver needs: ideas to find, cases to test, checks to run")
    solution: str = program("the reference solution, in the original problem's form", 4000)
    inputs: list[TestInput] = Field(min_length=1, max_length=8, description="new hidden test inputs, written out")
    generator: str = program("reads an integer k from stdin, prints one large test input; empty if none", 2000, 0)
    generated: int = Field(ge=0, le=4, description="how many inputs to generate with k = 1, 2, ...; 0 if none")


@dataclass(frozen=True)
class MathDraft:
    """A math variant as the writer proposed it; nothing in it is trusted until the sandbox has run it."""

    kind: str  # math_sweep | math_verify
    question: str
    hops: int
    program: str
    variant_input: str
    seed_input: str
    claimed_answer: str


@dataclass(frozen=True)
class CodeDraft:
    """A code variant as the writer proposed it: its outputs are computed by running `solution`."""

    change: str
    hops: int
    solution: str
    inputs: tuple[str, ...]
    generator: str
    generated: int


def seed_answer(seed: Task) -> str:
    answers = " | ".join(seed.answers) or "(none given)"
    return answers if len(answers) <= SEED_ANSWER_CHARS else answers[:SEED_ANSWER_CHARS] + "..."


def variant_request(role: str, reply_type: type, seed: Task, index: int, count: int, **values: str) -> Request:
    """One request per (seed, index); the index is in the prompt, so variants of one seed differ at temperature 0."""
    user = render_prompt(f"synth/{role}_user", question=seed.question, number=index + 1, count=count, **values)
    return Request(chat(load_prompt(f"synth/{role}_system"), user), reply_type, stage=STAGE, sample_index=index,
                   tag=(seed.id, index))  # fmt: skip


class MathVariantRole(Role):
    """`request(seed, index, count, modules)` -> Request; `parse(reply)` -> MathDraft."""

    name, reply_type = "math_variant", MathVariantReply

    def request(self, seed: Task, index: int, count: int, modules: tuple[str, ...]) -> Request:
        return variant_request(
            self.name, self.reply_type, seed, index, count, answer=seed_answer(seed), modules=", ".join(modules)
        )

    def parse(self, reply: MathVariantReply) -> MathDraft:
        return MathDraft(
            kind=f"math_{reply.kind}", question=reply.question.strip(), hops=reply.steps, program=reply.program,
            variant_input=one_line(reply.variant_input), seed_input=one_line(reply.seed_input),
            claimed_answer=reply.claimed_answer.strip(),
        )  # fmt: skip


class CodeVariantRole(Role):
    """`request(seed, index, count, modules)` -> Request; `parse(reply)` -> CodeDraft."""

    name, reply_type = "code_variant", CodeVariantReply

    def request(self, seed: Task, index: int, count: int, modules: tuple[str, ...]) -> Request:
        functional = bool(seed.tests and "functional" in seed.tests)
        form = load_prompt(f"synth/code_variant_{'functional' if functional else 'stdin'}")
        starter = str(seed.extra.get("starter_code") or "").strip() or "(none)"
        return variant_request(
            self.name, self.reply_type, seed, index, count, form=form, starter=starter, modules=", ".join(modules)
        )

    def parse(self, reply: CodeVariantReply) -> CodeDraft:
        generated = reply.generated if reply.generator.strip() else 0
        return CodeDraft(change=reply.change.strip(), hops=reply.steps, solution=reply.solution,
                         inputs=tuple(reply.inputs), generator=reply.generator, generated=generated)  # fmt: skip


def one_line(text: str) -> str:
    """A parameter line as stdin: one line, ended by a newline (input() reads it either way)."""
    return " ".join(text.split()) + "\n"
