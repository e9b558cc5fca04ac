"""What an LLM role is: a prompt, a reply type, how to build its Request and how to read its reply.

Every stage that asks a model something does it through a role (coa's planner and answerer, refine's
script writer and simulator, the judge, persona expansion, the pass-rate rollout). A role holds no I/O
(DESIGN rule 6): `request(...)` builds the Request from the stage's inputs and the prompt files under
prompts/<stage>/, the caller sends it through factory.llm, and `parse(reply, ...)` turns the parsed reply
(a `reply_type` instance) into the stage's own record. A failed call never reaches `parse`: the caller
decides what a failure means for its stage (an error event, a failed check, a counted miss).

A request is the cache key (its messages, schema, params and sample index), so a role must build the same
Request for the same inputs: the recorded replay sets depend on it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .request import Request


class Role:
    """One LLM role: `name`, `reply_type`, `request(...)` -> Request, `parse(reply, ...)` -> the stage's record.

    `reply_type`: the type `parse` reads: a pydantic model (the schema sent is it, or a narrowing of it built
    per instance as `response_model`); `dict` where the schema is built per request; None for free text."""

    name: ClassVar[str]
    reply_type: ClassVar[type | None] = None

    def request(self, *args: Any, **kwargs: Any) -> Request:
        raise NotImplementedError

    def parse(self, reply: Any, *args: Any) -> Any:
        raise NotImplementedError


def chat(system: str, *users: str) -> list[dict[str, str]]:
    """The messages of one request: the system prompt, then each user message in order."""
    return [{"role": "system", "content": system}, *({"role": "user", "content": user} for user in users)]
