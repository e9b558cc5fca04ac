"""The policy as an LLM role (factory.llm.role): what a rollout asks it, and which part of its reply is the answer.

verl/AFM task rows carry the chat prompt their RL run uses: a rollout sends that
prompt unchanged, so the pass rate measures the policy on the prompt it will be
trained with. Plain rows get prompts/passrate/system_<domain>.md and user.md.
"""

from __future__ import annotations

from typing import Any

from ..checks import final_answer, last_boxed, python_code
from ..llm import Request
from ..llm.role import Role, chat
from ..prompts import load_prompt, render_prompt
from ..tasks import Task

STAGE = "passrate"


class Policy(Role):
    """The policy answering one task in free text (no schema); `parse` keeps the part the checker judges."""

    name, reply_type = "policy", None

    def request(self, task: Task, sample_index: int, params: dict[str, Any]) -> Request:
        return Request(self.messages(task), stage=STAGE, sample_index=sample_index, params=params)

    @staticmethod
    def messages(task: Task) -> list[dict[str, Any]]:
        if task.prompt:
            return [dict(message) for message in task.prompt]
        user = render_prompt("passrate/user", question=task.question)
        starter = task.extra.get("starter_code")
        if task.domain == "code" and isinstance(starter, str) and starter.strip():
            user += "\n\n" + render_prompt("passrate/starter_code", starter_code=starter.strip())
        return chat(load_prompt(f"passrate/system_{task.domain}"), user)

    @staticmethod
    def parse(completion: str, domain: str) -> str:
        """The part of the reply the checker judges: the program, the last \\boxed{}, or the answer span."""
        if domain == "code":
            return python_code(completion).strip()
        text = final_answer(completion)
        if domain == "math":
            boxed = last_boxed(text)
            return boxed if boxed is not None else text
        return text
