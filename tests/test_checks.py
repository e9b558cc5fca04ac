"""Correctness checkers on real tasks: nq (EM/F1), MATH-500/AMC (math-verify),
livecodebench (sandboxed tests), and an LLM judge over the loopback server."""

import asyncio
import threading

import pytest
from loopback_server import ok
from task_files import SHARED, tasks_folder

from factory.checks import (
    CODE_LIMITS,
    CheckError,
    CodeTests,
    LLMJudge,
    MathAnswer,
    default_checker,
    get_checker,
    last_boxed,
    python_code,
)  # fmt: skip
from factory.llm import LLMClient
from factory.tasks import load_tasks

DATA = tasks_folder()  # ../shared's task files, or the subsets a bare clone ships (tests/data/tasks)

STDIN_RIGHT = "<answer>\n```py\ns = input().strip()\nprint('Yes' if s.endswith('san') else 'No')\n```\n</answer>"
STDIN_WRONG = "```python\nprint('Yes')\n```"
STDIN_CONTEST = """```py
import sys
if sys.stdin.readline().strip()[-3:] == 'san':
    print('Yes')
    exit()
print('No')
```"""
FUNC_RIGHT = """```python
class Solution:
    def isBalanced(self, num: str) -> bool:
        return sum(map(int, num[::2])) == sum(map(int, num[1::2]))
```"""
FUNC_WRONG = FUNC_RIGHT.replace("==", "!=")


def by_id(name):
    return {t.id.split("/")[-1]: t for t in load_tasks(DATA / name)}


@pytest.fixture(scope="module")
def math500():
    return by_id("math500.parquet")


@pytest.fixture(scope="module")
def lcb():
    return by_id("livecodebench_v5.parquet")


@pytest.fixture(scope="module")
def math_checker():
    checker = MathAnswer(workers=2, timeout_s=3)
    yield checker
    checker.close()


def test_boxed_and_code_extraction():
    assert last_boxed(r"first \boxed{1} then \boxed{\frac{a}{b^{2}}} done") == r"\frac{a}{b^{2}}"
    assert last_boxed(r"\boxed{\{1, 2\}}") == r"\{1, 2\}" and last_boxed("no box") is None
    assert last_boxed(r"\boxed{unclosed") is None
    reply = "```text\nnot code\n```\n```python\nx = 1\n```\n```py\nx = 2\n```\n```bash\nls\n```"
    assert python_code(reply) == "x = 2\n" and python_code("print(1)") == "print(1)"
    # AFM: the last <answer> span's python blocks, joined; earlier <code> steps and ```sh samples are not the answer.
    afm = (
        "<code>\n```py\nprint('a test')\n```\n</code>\n<answer>\n```py\nimport sys\n```\n"
        "```python\nprint(sys.stdin.read())\n```\n```sh\n1 2\n```\n</answer>"
    )
    assert python_code(afm) == "import sys\n\nprint(sys.stdin.read())\n"
    assert python_code("```py\nx = 1\n```\n<answer>print(2)</answer>") == "print(2)"


def test_qa_exact_match_and_f1_on_nq_rows():
    nq = load_tasks(DATA / "nq_full.jsonl", limit=3)
    qa, em, f1 = get_checker("qa"), get_checker("exact_match"), get_checker("f1")
    assert qa.check("<answer>The Wilhelm Conrad Röntgen.</answer>", nq[0]).correct
    partial = qa.check("<answer>Wilhelm Röntgen</answer>", nq[0])
    assert not partial.correct and partial.score == pytest.approx(0.8) and "f1=0.80" in partial.detail
    assert em.check("mfsk", nq[2]).correct and em.check("Olivia!", nq[2]).score == 1.0  # any alias
    assert f1.check("Röntgen", nq[0]).score == pytest.approx(0.5) and f1.check("Röntgen", nq[0]).correct
    assert not em.check("Marie Curie", nq[0]).correct and f1.check("Marie Curie", nq[0]).score == 0.0
    assert default_checker(nq[0]).name == "qa"


@pytest.mark.parametrize(
    "task_id, reply, correct",
    [
        ("0", r"<answer>\boxed{\left( 3, \frac{\pi}{2} \right)}</answer>", True),
        ("0", r"so the point is \boxed{(3, \pi/2)}.", True),
        ("0", r"\boxed{(3, \pi)}", False),
        ("219", r"<answer>\boxed{0.5}</answer>", True),  # gold \frac{1}{2}
        ("219", r"\boxed{\dfrac{1}{2}}", True),
        ("219", r"\boxed{\frac{1}{3}}", False),
        ("2", r"\boxed{14/3}", True),  # gold \frac{14}{3}
        ("8", r"\boxed{\sqrt{117}}", True),  # gold 3\sqrt{13}
        ("8", r"\boxed{3\sqrt{12}}", False),
        ("4", r"\boxed{\text{Evelyn}}", True),
        ("3", "the answer is 9, not boxed", True),  # no \boxed: math-verify finds the last number
        ("3", "no answer at all", False),
    ],
)
def test_math_equivalence_on_real_math500_answers(math500, math_checker, task_id, reply, correct):
    result = math_checker.check(reply, math500[task_id])
    assert result.correct is correct, result.detail
    assert result.error is None


def test_math_on_amc_and_off_the_main_thread(math_checker):
    amc = load_tasks(DATA / "amc23.parquet", limit=1)[0]  # gold "27.0"
    results = []
    thread = threading.Thread(target=lambda: results.append(math_checker.check(r"\boxed{27}", amc)))
    thread.start()
    thread.join(60)
    assert results and results[0].correct  # math-verify alone raises off the main thread

    async def many():
        replies = [r"\boxed{27}", r"\boxed{26}", r"\boxed{54/2}"]
        return await asyncio.gather(*(math_checker.acheck(reply, amc) for reply in replies))

    assert [r.correct for r in asyncio.run(many())] == [True, False, True]
    assert get_checker("math") is get_checker("math")  # shared: its worker processes are reused


def test_a_hung_math_worker_is_killed_and_replaced(math_checker):
    job = {"golds": [r"\boxed{2}"], "answer": r"\boxed{9^{9^{9^{9}}}}", "timeout_s": 60}
    reply = math_checker.pool.ask(job, deadline_s=0.3)
    assert reply["equal"] is False and reply["error"].startswith("no reply in")
    again = math_checker.pool.ask({"golds": [r"\boxed{2}"], "answer": r"\boxed{4/2}", "timeout_s": 3}, 30)
    assert again["equal"] is True


def test_code_stdin_problem_passes_and_fails(lcb):
    task, checker = lcb["abc374_a"], get_checker("code")
    assert checker.check(STDIN_RIGHT, task).model_dump() == {
        "correct": True,
        "score": 1.0,
        "detail": "2/2 passed",
        "error": None,
    }
    assert checker.check(STDIN_CONTEST, task).correct  # sys.stdin and exit(), as contest code does
    wrong = checker.check(STDIN_WRONG, task)
    assert not wrong.correct and wrong.score == 0.5 and "case 2: wrong output: expected 'No', got 'Yes'" in wrong.detail
    assert default_checker(task) is checker


def test_code_functional_problem_passes_and_fails(lcb):
    task, checker = lcb["3636"], get_checker("code")
    assert checker.check(FUNC_RIGHT, task).correct
    wrong = checker.check(FUNC_WRONG, task)
    assert not wrong.correct and wrong.detail == "0/1 passed; case 1: wrong value: expected True, got False"
    missing = checker.check("```python\ndef isBalanced(num):\n    return True\n```", task)
    assert not missing.correct and "NameError" in missing.detail


def test_every_livecodebench_functional_script_becomes_literal_calls(lcb):
    from factory.checks.code_cases import CallCase, cases_of

    functional = [t for t in lcb.values() if "functional" in t.tests]
    cases = [case for t in functional for case in cases_of(t.tests)]
    assert (
        len(functional) == (62 if DATA == SHARED else 7) and cases and all(isinstance(case, CallCase) for case in cases)
    )
    assert all(case.method == t.tests["func_name"] for t in functional for case in cases_of(t.tests))


def test_a_functional_script_of_another_shape_is_compared_in_the_parent(lcb):
    from factory.checks.code_cases import ScriptCase, cases_of

    task = lcb["3636"].model_copy(deep=True)
    task.tests["functional"] = "s = Solution()\nassert s.isBalanced('24123') is True\nassert not s.isBalanced('1234')\n"
    (case,) = cases_of(task.tests)
    assert isinstance(case, ScriptCase) and "24123" in case.source and "True" not in case.source  # expected stays here
    assert get_checker("code").check(FUNC_RIGHT, task).correct
    wrong = get_checker("code").check(FUNC_WRONG, task)
    assert not wrong.correct and "assert failed: s.isBalanced('24123') is True (got False)" in wrong.detail
    for script in (
        "expected = True\nassert Solution().isBalanced('24123') == expected\n",
        "for n in ['24123']:\n    assert Solution().isBalanced(n)\n",
    ):
        task.tests["functional"] = script
        undecided = get_checker("code").check(FUNC_RIGHT, task)
        assert not undecided.correct and "checked outside the program" in undecided.error


def test_hostile_code_fails_by_timeout_or_refusal_not_a_crash(lcb):
    quick = CodeTests(limits=CODE_LIMITS.model_copy(update={"cpu_s": 1, "wall_s": 3}))
    looping = quick.check("```python\nwhile True:\n    pass\n```", lcb["abc374_a"])
    assert not looping.correct and looping.score == 0.0 and "timeout/" in looping.detail
    spinning = quick.check(
        "```python\nclass Solution:\n    def isBalanced(self, num):\n        while True: pass\n```", lcb["3636"]
    )
    assert not spinning.correct and "timeout/" in spinning.detail
    escaping = quick.check("```python\nimport os\nos.system('echo hi')\n```", lcb["abc374_a"])
    assert not escaping.correct and "rejected/import" in escaping.detail
    assert quick.check("", lcb["abc374_a"]).detail == "no code in the reply"


def test_code_checks_run_concurrently_from_async_code(lcb):
    checker = CodeTests(max_parallel=2)

    async def batch():
        replies = [STDIN_RIGHT, STDIN_WRONG, STDIN_RIGHT]
        return await asyncio.gather(*(checker.acheck(reply, lcb["abc374_a"]) for reply in replies))

    assert [r.score for r in asyncio.run(batch())] == [1.0, 0.5, 1.0]


def judge(config, prediction, task):
    async def go():
        async with LLMClient(config) as llm:
            return await get_checker("llm_judge", llm=llm).acheck(prediction, task)

    return asyncio.run(go())


def test_llm_judge_gives_a_structured_verdict(server, fast_config):
    nq = load_tasks(DATA / "nq_full.jsonl", limit=1)[0]
    server.route("first nobel prize in physics", ok({"rationale": "Same person.", "correct": 1}))
    result = judge(fast_config(), "<answer>W. C. Roentgen</answer>", nq)
    assert result.correct and result.score == 1.0 and result.detail == "Same person." and result.error is None
    sent = server.requests[0]["body"]["messages"]
    assert sent[0]["role"] == "system" and "Wilhelm Conrad Röntgen" in sent[1]["content"]
    assert "W. C. Roentgen" in sent[1]["content"]


def test_llm_judge_garbage_is_a_recorded_failure(server, fast_config):
    nq = load_tasks(DATA / "nq_full.jsonl", limit=1)[0]
    server.route("first nobel prize in physics", *[ok("certainly! it is correct")] * 3)
    result = judge(fast_config(max_parse_retries=0), "Röntgen", nq)
    assert not result.correct and result.score == 0.0 and result.error.startswith("judge schema")
    server.route("first nobel prize in physics", ok({"rationale": "x" * 5000, "correct": 1}))
    assert judge(fast_config(max_parse_retries=0), "Röntgen again", nq).error  # over the length bound


def test_registry_names_and_errors(lcb):
    with pytest.raises(CheckError, match="unknown checker 'regex'"):
        get_checker("regex")
    with pytest.raises(CheckError, match="needs an LLM client"):
        get_checker("llm_judge")
    with pytest.raises(CheckError, match="checker 'code'"):
        get_checker("code", bogus=1)
    with pytest.raises(CheckError, match="async only"):
        LLMJudge(llm=None).check("x", lcb["3636"])
    assert (
        isinstance(get_checker("code", max_parallel=1), CodeTests) and get_checker("f1", threshold=0.9).threshold == 0.9
    )
