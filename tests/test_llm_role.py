"""Every LLM role has the one shape of factory.llm.role, and the judge still reads a failed call as a failed check."""

import asyncio

import pytest

from factory.checks import JudgeRole, JudgeVerdict, LLMJudge
from factory.coa.roles import ROLE_TYPES
from factory.llm import Request, Result
from factory.llm.role import Role, chat
from factory.passrate.prompting import Policy
from factory.personas.expand import PersonaExpander
from factory.refine.roles import ScriptWriter, ThoughtWriter, TrajectorySimulator
from factory.tasks import Task

TASK = Task(id="t/1", question="Who discovered X-rays?", answers=["Röntgen"], domain="qa", source="t")


@pytest.mark.parametrize(
    "role", [*ROLE_TYPES.values(), ScriptWriter, TrajectorySimulator, ThoughtWriter, JudgeRole, PersonaExpander, Policy]
)
def test_every_role_is_a_role_with_a_name_and_a_reply_type(role):
    assert issubclass(role, Role) and role.name and "reply_type" in vars(role)
    assert role.request is not Role.request and role.parse is not Role.parse


def test_chat_is_the_system_prompt_then_the_user_messages():
    assert chat("s", "u1", "u2") == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u1"},
        {"role": "user", "content": "u2"},
    ]


class Replying:
    """A client stand-in that answers every request with one Result."""

    def __init__(self, result: Result):
        self.result, self.requests = result, []

    async def run(self, request: Request) -> Result:
        self.requests.append(request)
        return self.result


def test_the_judge_reads_a_verdict_and_a_failed_call():
    verdict = JudgeVerdict(rationale="It names Röntgen.", correct=1)
    client = Replying(Result(request_hash="h", ok=True, parsed=verdict))
    result = asyncio.run(LLMJudge(client).acheck("Röntgen", TASK))
    assert result.correct and result.score == 1.0 and result.detail == "It names Röntgen." and result.error is None
    assert client.requests[0].response_model is JudgeVerdict and client.requests[0].tag == "t/1"
    failed = Replying(Result(request_hash="h", ok=False, error_kind="schema", error="x" * 500))
    result = asyncio.run(LLMJudge(failed).acheck("Röntgen", TASK))
    assert not result.correct and result.score == 0.0 and result.error == "judge schema: " + "x" * 160
