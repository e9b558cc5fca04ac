"""Math/code variants over real HTTP (scripted loopback replies), with every program really run in the sandbox.

The replies are what a strong model writes for the real prompt; the ground truth must be what the
program prints, never the writer's claim, and a hostile or broken program is a dropped candidate with a reason.
"""

import asyncio
import json

import pytest
from loopback_server import Action, ok

from factory.checks import CODE_LIMITS, CodeTests, MathAnswer
from factory.errors import FactoryError
from factory.llm import LLMClient
from factory.sandbox import SandboxLimits
from factory.synth.math_code import expand_math_code
from factory.tasks import Task

DIVISORS = "How many positive whole-number divisors does 196 have?"
F_SUM = "If $f(x) = \\frac{3x-2}{x-2}$, what is the value of $f(-2) +f(-1)+f(0)$? Express it as a common fraction."
DIVISOR_PROGRAM = """def divisors(n):
    count, d = 0, 1
    while d * d <= n:
        if n % d == 0:
            count += 1 if d * d == n else 2
        d += 1
    return count

words = input().split()
if words[0] == "seed":
    print(divisors(int(words[1])))
else:
    limit, target = int(words[1]), int(words[2])
    print(sum(1 for n in range(1, limit + 1) if divisors(n) == target))
"""
F_SUM_PROGRAM = """from fractions import Fraction

n = int(input())
total = sum(Fraction(3 * x - 2, x - 2) for x in range(-n, 1))
print(f"{total.numerator}/{total.denominator}" if total.denominator != 1 else total.numerator)
"""
FAST_MATH = SandboxLimits(cpu_s=1, wall_s=3)  # a hostile loop costs the suite one second


def math_task(task_id, question, answer):
    return Task(id=task_id, question=question, answers=[answer], domain="math", source="test")


def math_reply(question, program, variant_input, seed_input, claimed, kind="sweep", steps=4):
    reply = {"think": "Turn the single count into a sweep over a range and check it by running the count.",
             "kind": kind, "question": question, "steps": steps, "program": program,
             "variant_input": variant_input, "seed_input": seed_input, "claimed_answer": claimed}  # fmt: skip
    return ok(json.dumps(reply))


def expand(fast_config, seeds, **kw):
    async def go():
        async with LLMClient(fast_config()) as client:
            return await expand_math_code(seeds, client, **kw)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def checker():
    math = MathAnswer()
    yield math
    math.close()


def test_math_ground_truth_is_what_the_program_prints(server, fast_config, checker):
    sweep = "For how many integers n with 1 <= n <= 10000 does n have exactly 9 positive divisors?"
    server.route(DIVISORS, math_reply(sweep, DIVISOR_PROGRAM, "range 10000 9", "seed 196", claimed="31"))
    sums = "Let f(x) = (3x-2)/(x-2). Find f(-12) + f(-11) + ... + f(0) as a reduced fraction."
    server.route("f(-2) +f(-1)+f(0)", math_reply(sums, F_SUM_PROGRAM, "12", "2", claimed="2702137/90090", steps=3))
    seeds = [math_task("MATH500/3", DIVISORS, "9"), math_task("MATH500/2", F_SUM, "\\frac{14}{3}")]
    count, fraction = expand(fast_config, seeds, checker=checker)

    assert count.kept and fraction.kept, (count.verdicts, fraction.verdicts)
    assert count.task.answers == ["32"]  # the program's count, not the writer's 31
    assert count.provenance["claimed_matches"] is False and fraction.provenance["claimed_matches"] is True
    assert fraction.task.answers == ["2702137/90090"]
    assert list(count.verdicts) == ["computed", "consistent", "answer_not_in_question"]
    assert "reproduced the seed's answer (14/3)" in fraction.verdicts["consistent"][1]  # math-verify: = \frac{14}{3}
    assert (count.kind, count.hops, fraction.hops) == ("math_sweep", 4, 3)
    task = count.task
    assert (task.id, task.source, task.domain, task.prompt) == ("synth:math_sweep/MATH500/3/0", "synth:math_sweep",
                                                                "math", None)  # fmt: skip
    assert task.question == sweep and task.extra["provenance"]["seed"] == "MATH500/3"
    assert [run["stdout"] for run in count.provenance["runs"]] == ["32\n", "32\n", "9\n"]
    for candidate in (count, fraction):
        answer = candidate.task.answers[0]
        assert checker.check(f"<answer>\\boxed{{{answer}}}</answer>", candidate.task).correct


HOSTILE = {  # marker in the seed question -> (program, the reason the candidate is dropped for)
    "loops forever": ("while True:\n    pass\n", "timeout/"),  # the CPU limit, or the wall limit on a busy machine
    "raises": ("n = int(input())\nprint(10 // (n - n))\n", "ZeroDivisionError"),
    "prints nothing": ("n = int(input())\n", "printed nothing"),
    "reads a file": ("print(open('/etc/passwd').read()[:5])\n", "rejected/builtin"),
    "uses the network": ("import socket\nprint(socket.gethostname())\n", "rejected/import"),
    "prints two lines": ("n = int(input())\nprint(n)\nprint(n + 1)\n", "printed 2 lines"),
    "prints words": ("input()\nprint('the answer is 12')\n", "not a plain number"),
}


def test_hostile_or_broken_programs_are_dropped_with_a_reason(server, fast_config, checker):
    seeds = []
    for number, (marker, (program, _)) in enumerate(HOSTILE.items()):
        question = f"A seed task that {marker}: what is 3 + 4?"
        server.route(marker, math_reply(f"Variant of a task that {marker}: sum i for i up to 40.", program,
                                        "40", "4", claimed="820"))  # fmt: skip
        seeds.append(math_task(f"seed/{number}", question, "7"))
    candidates = expand(fast_config, seeds, checker=checker, math_limits=FAST_MATH)

    for candidate, (marker, (_, reason)) in zip(candidates, HOSTILE.items()):
        assert candidate.dropped_by == "computed", (marker, candidate.verdicts)
        assert reason in candidate.verdicts["computed"][1], (marker, candidate.verdicts)
        assert candidate.task.answers == []


def test_inconsistent_programs_and_written_answers_are_dropped(server, fast_config, checker):
    random_sum = "import random\ninput()\nprint(random.randint(1, 10 ** 12))\n"
    wrong_core = "n = int(input())\nprint(n * (n + 1) // 2 + 1)\n"  # off by one: the seed's 3+4... check fails
    honest = "n = int(input())\nprint(n * (n + 1) // 2)\n"
    cases = {
        "rolls dice": (random_sum, "consistent", "a second run disagrees"),
        "is off by one": (wrong_core, "consistent", "not the seed's answer 6"),
        "gives it away": (honest, "answer_not_in_question", "the answer 820 is written in the question"),
    }
    seeds = []
    for number, (marker, (program, _, _)) in enumerate(cases.items()):
        server.route(marker, math_reply("Find 1 + 2 + ... + 40; the total is 820, check it.", program, "40", "3",
                                        claimed="820"))  # fmt: skip
        seeds.append(math_task(f"seed/{number}", f"A seed that {marker}: what is 1 + 2 + 3?", "6"))
    candidates = expand(fast_config, seeds, checker=checker)

    for candidate, (marker, (_, gate, reason)) in zip(candidates, cases.items()):
        said = candidate.verdicts[gate][1]
        assert candidate.dropped_by == gate and any(r in said for r in reason.split("|")), (marker, candidate.verdicts)


def test_garbage_replies_become_recorded_failures(server, fast_config):
    server.route("garbled", *[ok("Here is a harder problem: count the primes below 100.")] * 6)
    server.route("refused", *[Action(status=400)] * 4)
    seeds = [
        math_task("seed/garbled", "A garbled seed: 2 + 2?", "4"),
        math_task("seed/refused", "A refused seed?", "1"),
    ]
    garbled, refused = expand(fast_config, seeds, checker=None)

    assert garbled.dropped_by == "written" and garbled.verdicts["written"][1].startswith("schema")
    assert refused.dropped_by == "written" and refused.verdicts["written"][1].startswith("bad_request")


def test_seeds_of_another_domain_are_a_one_line_error(fast_config):
    qa = Task(id="nq/1", question="Who wrote Hamlet?", answers=["Shakespeare"], domain="qa", source="nq")
    with pytest.raises(FactoryError, match="nq/1 is not one"):
        expand(fast_config, [qa])


PAIRS = """You are given N integers A_1, ..., A_N and an integer K. Count the pairs (i, j) with 1 <= i < j <= N
such that A_i + A_j is a multiple of K.

Input
N K
A_1 A_2 ... A_N

Output
Print the number of pairs.

Constraints
- 2 <= N <= 100
- 1 <= K <= 100
- 1 <= A_i <= 1000

Sample Input 1
4 3
1 2 3 4

Sample Output 1
2
"""
PAIRS_TESTS = {"stdin": ["4 3\n1 2 3 4\n", "3 4\n1 3 5\n"], "expected_output": ["2\n", "2\n"]}
PAIRS_SOLUTION = """import sys

def main():
    data = sys.stdin.read().split()
    n, k = int(data[0]), int(data[1])
    seen, total = {}, 0
    for value in data[2:2 + n]:
        residue = int(value) % k
        total += seen.get((k - residue) % k, 0)
        seen[residue] = seen.get(residue, 0) + 1
    print(total)

main()
"""
PAIRS_GENERATOR = """import random

k = int(input())
random.seed(k)
n = 40000
print(n, random.randint(1, 1000))
print(" ".join(str(random.randint(0, 10 ** 9)) for _ in range(n)))
"""
PAIRS_CHANGE = "New constraints: 2 <= N <= 40000, 1 <= K <= 10^9 and 0 <= A_i <= 10^9."


def code_reply(change, solution, inputs, generator="", generated=0, steps=5):
    reply = {"think": "Larger limits rule out checking every pair; zero residues and K = 1 are the edge cases.",
             "change": change, "steps": steps, "solution": solution, "inputs": inputs, "generator": generator,
             "generated": generated}  # fmt: skip
    return ok(json.dumps(reply))


def program(code):
    return f"<answer>\n```py\n{code}```\n</answer>"


def test_code_variant_tests_are_computed_by_the_reference(server, fast_config):
    inputs = ["5 5\n0 0 5 10 3\n", "2 1000000000\n999999999 1\n", "4 3\n1 2 3 4\n"]  # the last repeats a sample
    server.route("multiple of K", code_reply(PAIRS_CHANGE, PAIRS_SOLUTION, inputs, PAIRS_GENERATOR, generated=2))
    seed = Task(id="lcb/pairs", question=PAIRS, tests=PAIRS_TESTS, domain="code", source="test")
    (candidate,) = expand(fast_config, [seed])

    assert candidate.kept, candidate.verdicts
    tests = candidate.task.tests
    assert tests["stdin"][:4] == [*PAIRS_TESTS["stdin"], *inputs[:2]] and len(tests["stdin"]) == 6
    assert tests["expected_output"][:4] == ["2\n", "2\n", "6\n", "1\n"]  # what the reference printed
    assert candidate.provenance["repeated_inputs"] == 1 and candidate.task.question.endswith(PAIRS_CHANGE)
    assert (candidate.kind, candidate.hops, candidate.task.domain) == ("code_tests", 5, "code")
    fast = CodeTests(CODE_LIMITS.model_copy(update={"cpu_s": 2, "wall_s": 4}))
    assert fast.check(program(PAIRS_SOLUTION), candidate.task).correct
    zero_blind = PAIRS_SOLUTION.replace("(k - residue) % k", "k - residue")  # right on the seed's tests only
    assert fast.check(program(zero_blind), seed).correct
    assert "case 3: wrong output" in fast.check(program(zero_blind), candidate.task).detail
    brute = "n, k = map(int, input().split())\na = list(map(int, input().split()))\n"
    brute += "print(sum((a[i] + a[j]) % k == 0 for i in range(n) for j in range(i + 1, n)))\n"
    assert fast.check(program(brute), seed).correct
    assert "timeout" in fast.check(program(brute), candidate.task).detail  # the generated inputs need the O(N) idea


DAWDLE = "import time\n\nstart = time.process_time()\nwhile time.process_time() - start < 1.2:\n    pass\n"


def test_code_reference_is_trusted_only_when_it_passes_the_seed(server, fast_config):
    wrong, crashes = (
        PAIRS_SOLUTION.replace("print(total)", end) for end in ("print(total + 1)", "print(6 // (total - 6))")
    )
    broken = {
        "wrong on the seed": (wrong, "consistent", "fails the seed's tests"),
        "crashes on new input": (crashes, "computed", "new input 1: error/exception"),
        # the CPU limit or, on a machine busy enough that 2 CPU seconds take 4 wall seconds, the wall limit
        "spins": ("while True:\n    pass\n", "computed", ": timeout/"),
        # 1.2 CPU s of a 2 s limit; on a busy machine those may pass the 4 s wall limit: a timeout, as slow
        "dawdles": (DAWDLE + PAIRS_SOLUTION, "computed", "over half the time limit|: timeout/"),
        "bad generator": (PAIRS_SOLUTION, "computed", "the generator with k=1: error/exit_code"),
    }
    seeds = []
    for number, (marker, (solution, _, _)) in enumerate(broken.items()):
        generator = "raise SystemExit(3)\n" if marker == "bad generator" else ""
        reply = code_reply(PAIRS_CHANGE, solution, ["5 5\n0 0 5 10 3\n"], generator, generated=int(bool(generator)))
        server.route(marker, reply)
        seeds.append(Task(id=f"lcb/{number}", question=f"{PAIRS}\n({marker})", tests=PAIRS_TESTS, domain="code",
                          source="test"))  # fmt: skip
    limits = CODE_LIMITS.model_copy(update={"cpu_s": 2, "wall_s": 4})  # a case may take 1 s, even on a busy machine
    candidates = expand(fast_config, seeds, code_limits=limits)

    for candidate, (marker, (_, gate, reason)) in zip(candidates, broken.items()):
        said = candidate.verdicts[gate][1]
        assert candidate.dropped_by == gate and any(r in said for r in reason.split("|")), (marker, candidate.verdicts)


LARGEST = "Given an integer array nums and an integer k, return the sum of the k largest elements of nums."
LARGEST_TESTS = {"functional": '\nresult = Solution().largestSum([3, 1, 2], 2)\nassert result == 5, f"Expected 5"\n',
                 "func_name": "largestSum"}  # fmt: skip
LARGEST_SOLUTION = "class Solution:\n    def largestSum(self, nums: List[int], k: int) -> int:\n"
LARGEST_SOLUTION += "        return sum(sorted(nums, reverse=True)[:k])\n"


def test_functional_seeds_get_new_calls_with_returned_values(server, fast_config):
    inputs = ["[[5, 5, 1], 1]", "[[-1, -2, -3], 2]", "[[3, 1, 2], 2]"]
    server.route("k largest", code_reply("Now nums may hold negative values.", LARGEST_SOLUTION, inputs))
    starter = "class Solution:\n    def largestSum(self, nums: List[int], k: int) -> int:\n        "
    seed = Task(id="lcb/largest", question=LARGEST, tests=LARGEST_TESTS, domain="code", source="test",
                extra={"starter_code": starter})  # fmt: skip
    (candidate,) = expand(fast_config, [seed])

    assert candidate.kept, candidate.verdicts
    script = candidate.task.tests["functional"]
    assert "result = Solution().largestSum([-1, -2, -3], 2)\nassert result == -3\n" in script
    assert script.count("= Solution()") == 3 and candidate.task.extra["starter_code"] == starter
    assert CodeTests().check(program(LARGEST_SOLUTION), candidate.task).detail == "3/3 passed"
    positive_only = LARGEST_SOLUTION.replace(
        "sum(sorted(nums, reverse=True)[:k])", "sum(sorted(nums)[-k:]) if min(nums) > 0 else 0"
    )
    assert CodeTests().check(program(positive_only), candidate.task).detail.startswith("2/3 passed")
