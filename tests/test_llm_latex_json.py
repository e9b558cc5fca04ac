"""LaTeX written with single backslashes inside JSON replies: repaired, re-asked, or left alone.

Replies are raw text as a model writes them (one backslash per LaTeX command);
the real MATH-500 and AMC23 tasks provide the LaTeX.
"""

import asyncio

import orjson
import pyarrow.parquet as pq
import pytest
from loopback_server import ok
from pydantic import BaseModel, Field
from task_files import task_file

from factory.llm import LLMClient, Request
from factory.llm.latex_commands import LATEX_COMMANDS
from factory.llm.latex_json import repair_latex_escapes
from factory.llm.structured import LatexAmbiguous, OutputInvalid, code_fields, output_spec
from factory.store import Store


class Solution(BaseModel):
    think: str
    answer: str


SPEC = output_spec(Solution)


def as_model_writes(value: str) -> str:
    """A JSON string as a model writes it: quotes, newlines and tabs escaped, backslashes not."""
    return '"' + value.replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def reply(think: str, answer: str) -> str:
    return f'{{"think": {as_model_writes(think)}, "answer": {as_model_writes(answer)}}}'


def read(raw: str, settle: bool = False) -> dict:
    return SPEC.parse(raw, settle=settle).jsonable


@pytest.mark.parametrize(
    "latex",
    [
        r"\frac{1}{2}", r"\dfrac{3}{4}", r"\tfrac{a}{b}", r"\theta", r"\tau", r"\times", r"\text{cm}",
        r"\textbf{x}", r"\boxed{7}", r"\beta", r"\binom{5}{2}", r"\bar{z}", r"\neq", r"\nabla f", r"\not\in",
        r"\newline", r"\rho", r"\left( 3, \frac{\pi}{2} \right)", r"\rightarrow", r"\forall x", r"\sqrt{2}",
        r"\alpha", r"\cdot", r"a \le b", r"\pi", r"\mathbb{R}", r"\{1, 2\}", r"3\,\text{m}", r"\$5", r"\infty",
        r"\underline{x}", r"\Delta", r"\%",
    ],
)  # fmt: skip
def test_a_latex_command_written_with_one_backslash_decodes_as_meant(latex):
    assert read(reply("The answer follows.", latex))["answer"] == latex


@pytest.mark.parametrize(
    "think",
    [
        "Line one\nThe next line\tthen a tab",
        "Steps:\n- first\n- second\n\nDone.",
        "for i in range(3):\n\ttotal += i\nreturn total",
        "i = 0\ni += 1\nu = 2\ne = 3",  # \ni, \nu, \ne are commands, but nothing here is LaTeX
        "name\tan apple\nto do",
        "Cost is $5\nand $6",
    ],
)
def test_text_with_real_newlines_and_tabs_is_untouched(think):
    raw = reply(think, "42")
    parsed = SPEC.parse(raw)
    assert parsed.jsonable == orjson.loads(raw) == {"think": think, "answer": "42"}
    assert parsed.notes == ()


def test_properly_escaped_json_is_untouched():
    value = {"think": 'He said "x" \\ 2 é / \t', "answer": "\\boxed{\\frac{1}{2}}"}
    raw = orjson.dumps(value).decode().replace("é", "\\u00e9").replace("/", "\\/")
    assert repair_latex_escapes(raw).text == raw
    assert read(raw) == value


@pytest.mark.parametrize(
    "think, expected",
    [
        (r"Let $a \ne b$ and $\nu_1 \to 0$.", r"Let $a \ne b$ and $\nu_1 \to 0$."),
        (r"We get \[\tan x = \frac{1}{2}\]", r"We get \[\tan x = \frac{1}{2}\]"),
        (r"So \boxed{\nu}", r"So \boxed{\nu}"),
        (r"Hence $$\ni$$ and \(x \top y\)", r"Hence $$\ni$$ and \(x \top y\)"),
        (r"\begin{align*}\triangle + \square &= 3\end{align*}", r"\begin{align*}\triangle + \square &= 3\end{align*}"),
    ],
)
def test_a_command_that_could_be_a_newline_is_latex_inside_math(think, expected):
    assert read(reply(think, "1"))["think"] == expected


def test_a_doubtful_command_outside_math_next_to_other_latex_is_asked_again():
    raw = '{"think": "Since $\\theta = 0$,\\nu = 3 follows.", "answer": "3"}'  # as the model wrote it
    with pytest.raises(LatexAmbiguous) as caught:
        SPEC.parse(raw)
    message = str(caught.value)
    assert '\\nu in "think"' in message and "\\\\frac" in message  # names the place, shows the fix
    settled = SPEC.parse(raw, settle=True)  # the last try keeps what JSON says: a newline
    assert settled.jsonable["think"] == "Since $\\theta = 0$,\nu = 3 follows."
    assert any("\\nu" in note and "JSON whitespace" in note for note in settled.notes)


def test_keys_and_structure_are_never_rewritten():
    raw = r'{"think": "x", "answer": "y", "\theta": "\alpha"}'
    scan = repair_latex_escapes(raw)
    assert scan.text == r'{"think": "x", "answer": "y", "\theta": "\\alpha"}'
    prose = 'Here it is: {"think": "ok", "answer": "\\sqrt{2}"} -- done'
    assert read(prose)["answer"] == "\\sqrt{2}"
    with pytest.raises(OutputInvalid, match="not valid JSON"):
        SPEC.parse('{"think": "\\frac", "answer": }')


def test_the_command_list_covers_every_escape_letter_and_is_real():
    for name in ("frac", "dfrac", "tfrac", "theta", "tau", "times", "text", "textbf", "boxed", "beta", "binom",
                 "bar", "neq", "nu", "nabla", "not", "newline", "rho", "right", "rightarrow", "forall"):  # fmt: skip
        assert name in LATEX_COMMANDS
    assert len(LATEX_COMMANDS) > 300 and all(name.isalpha() for name in LATEX_COMMANDS)


# -- code: valid escapes that only look like LaTeX -------------------------------------------------


class CodeStep(BaseModel):
    think: str
    code: str


# Programs whose identifiers, after a newline or a tab, spell a LaTeX command in the JSON text:
# "\neq", "\nabla", "\theta", "\times", "\tfrac", "\text" are newline/tab + "eq", "abla", ...
PROGRAMS = [
    "a = [1, 2]\neq = a[0] == a[1]\nprint(eq)",
    "import math\nabla = 3\nprint(abla)",
    "model = load()\nabla.fit(rows)",
    "values = read()\neq(values[0], values[1])",
    "for x in xs:\n\theta = x * 2\n\tprint(heta)",
    "if big:\n\times[0] = 10",
    "while n:\n\tfrac += 1\n\tn -= 1",
    "def suffix(path):\n\text = path.split('.')[-1]\n\treturn ext",
    "if name:\n\text.strip()",
    "i = 0\nu_0 = 1\nu_0 += i",
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_program_in_a_code_field_is_byte_identical(program):
    raw = f'{{"think": "Run it.", "code": {as_model_writes(program)}}}'
    spec = output_spec(CodeStep)
    assert spec.code_keys == {"code"}
    assert repair_latex_escapes(raw, spec.code_keys).text == raw
    parsed = spec.parse(raw)
    assert parsed.jsonable == orjson.loads(raw) and parsed.jsonable["code"] == program and parsed.notes == ()


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_program_in_a_prose_field_without_other_latex_is_byte_identical(program):
    raw = reply(program, "42")
    assert repair_latex_escapes(raw).text == raw
    parsed = SPEC.parse(raw)
    assert parsed.jsonable == {"think": program, "answer": "42"} and parsed.notes == ()


def test_a_code_field_keeps_every_valid_escape_and_repairs_only_invalid_ones():
    program = "s = s.rstrip('\r')\nprint('\bold', end='\rdone')"  # backspace, CR: what JSON says is meant
    written = as_model_writes(program).replace("\r", "\\r").replace("\b", "\\b")
    raw = f'{{"think": "x", "code": {written}}}'
    assert output_spec(CodeStep).parse(raw).jsonable["code"] == program
    regex = '{"think": "x", "code": "import re\\nprint(re.findall(\\"\\d+\\", s))"}'  # \d: invalid JSON
    assert output_spec(CodeStep).parse(regex).jsonable["code"] == 'import re\nprint(re.findall("\\d+", s))'


def test_latex_in_prose_is_repaired_next_to_a_program_left_alone():
    think = r"Let $\theta = \frac{\pi}{2}$ and $\nu \neq 0$; then \times 3 and \nabla f."
    program = "a = [1, 2]\neq = a[0] == a[1]"
    parsed = output_spec(CodeStep).parse(f'{{"think": {as_model_writes(think)}, "code": {as_model_writes(program)}}}')
    assert parsed.jsonable == {"think": think, "code": program}
    assert "\\theta" in parsed.notes[0] and "\\neq" in parsed.notes[0]


def test_a_fenced_program_in_prose_keeps_its_newlines_next_to_latex():
    think = "Since $\\theta$ is fixed:\n```py\nimport math\nabla = 3\nu = 2\n```"
    assert read(reply(think, "3"))["think"] == think


def test_code_shape_outside_math_next_to_other_latex_is_asked_again():
    raw = '{"think": "We need \\frac{1}{2} here.\\nabla = 3", "answer": "1"}'
    with pytest.raises(LatexAmbiguous, match=r'\\nabla in "think"'):
        SPEC.parse(raw)
    assert SPEC.parse(raw, settle=True).jsonable["think"] == "We need \\frac{1}{2} here.\nabla = 3"


def test_code_fields_come_from_names_and_content_media_type():
    class Tool(BaseModel):
        argument: str = Field(json_schema_extra={"contentMediaType": "text/x-python"})
        note: str = Field(json_schema_extra={"contentMediaType": "text/markdown"})
        validation_code: str | None = None
        program: str = ""
        answer: str = ""

    assert output_spec(Tool).code_keys == {"argument", "validation_code", "program"}
    nested = {"type": "object", "properties": {"steps": {"type": "array", "items": {
        "type": "object", "properties": {"snippet": {"type": "string"}, "thought": {"type": "string"}}}}}}  # fmt: skip
    assert code_fields(nested) == {"snippet"}
    assert code_fields({"type": "object", "properties": {"encode": {"type": "string"}}}) == set()


def test_a_string_takes_the_key_of_its_own_member_not_the_last_key_seen():
    raw = '{"steps": [{"code": "a\\neq = 1"}, "\\theta"], "think": "\\text{ok}"}'
    scan = repair_latex_escapes(raw, frozenset({"code"}))
    assert orjson.loads(scan.text) == {"steps": [{"code": "a\neq = 1"}, "\\theta"], "think": "\\text{ok}"}


# -- real math tasks -----------------------------------------------------------------------------


def math_tasks() -> list[tuple[str, str, str]]:
    rows = []
    for name in ("math500", "amc23"):
        for row in pq.read_table(task_file(f"{name}.parquet")).to_pylist():
            question = row["prompt"][-1]["content"].split("Task:\n", 1)[1]
            rows.append((name, question, row["reward_model"]["ground_truth"]))
    return rows


def test_replies_to_every_math500_and_amc23_task_decode_to_the_latex_meant():
    """A reply quoting the task and boxing the gold answer, written with single backslashes."""
    counts = {"tasks": 0, "plain_json_right": 0, "plain_json_invalid": 0, "repaired_right": 0, "asked_again": 0}
    for _, question, gold in math_tasks():
        meant = {"think": f"{question}\nSo the answer is ${gold}$.", "answer": f"\\boxed{{{gold}}}"}
        raw = reply(meant["think"], meant["answer"])
        counts["tasks"] += 1
        try:
            counts["plain_json_right"] += orjson.loads(raw) == meant
        except orjson.JSONDecodeError:
            counts["plain_json_invalid"] += 1
        try:
            got = read(raw)
        except LatexAmbiguous:
            counts["asked_again"] += 1
            continue
        if "\\\\" in question + gold:  # a LaTeX line break "\\" is a valid JSON escape for one backslash
            meant = {key: value.replace("\\\\", "\\") for key, value in meant.items()}
        counts["repaired_right"] += got == meant
    tasks = counts["tasks"]  # 540 with ../shared's files, 81 with the shipped subsets
    assert tasks in (540, 81)
    assert counts["plain_json_right"] == 0 and counts["plain_json_invalid"] > tasks * 0.4  # what a plain decoder gets
    assert counts["repaired_right"] == tasks and counts["asked_again"] == 0, counts


# -- through the client, against the loopback server ---------------------------------------------


def ask(marker: str) -> Request:
    return Request([{"role": "user", "content": f"solve {marker}"}], Solution, stage="math")


def run(config, requests, store=None):
    async def go():
        async with LLMClient(config, store) as llm:
            return await llm.complete_many(requests, progress=False)

    return asyncio.run(go())


def test_client_repairs_a_latex_reply_and_logs_the_repair(server, fast_config, tmp_path):
    _, question, gold = math_tasks()[0]  # MATH-500 #0: polar coordinates, gold \left( 3, \frac{\pi}{2} \right)
    server.route("polar", ok(reply(f"{question}\nThe angle is $\\theta = \\frac{{\\pi}}{{2}}$.", f"\\boxed{{{gold}}}")))
    store = Store(tmp_path / "s.sqlite")
    [result] = run(fast_config(), [ask("polar")], store)
    assert result.ok and result.attempts == 1
    assert result.parsed.answer == f"\\boxed{{{gold}}}" == "\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}"
    assert result.parsed.think.endswith("The angle is $\\theta = \\frac{\\pi}{2}$.")
    assert result.notes and "\\boxed" in result.notes[0] and "\\theta" in result.notes[0]
    [(status, error, parsed)] = store.query("SELECT status, error, parsed FROM llm_calls")
    assert status == "ok" and error == result.notes[0]
    assert orjson.loads(parsed)["answer"] == result.parsed.answer
    [again] = run(fast_config(), [ask("polar")], store)  # the cache reads the raw reply the same way
    assert again.cached and again.parsed == result.parsed and again.notes == result.notes
    assert len(server.requests) == 1


def test_client_asks_again_when_a_backslash_is_ambiguous(server, fast_config):
    doubtful = '{"think": "With $\\theta$ fixed,\\nu = 2 here.", "answer": "2"}'
    good = '{"think": "With $\\\\theta$ fixed, \\\\nu = 2 here.", "answer": "2"}'
    server.route("nu", ok(doubtful), ok(good))
    [result] = run(fast_config(), [ask("nu")])
    assert result.ok and result.attempts == 2 and result.notes == ()
    assert result.parsed.think == "With $\\theta$ fixed, \\nu = 2 here."
    feedback = server.requests[1]["body"]["messages"][-1]["content"]
    assert '\\nu in "think"' in feedback and "doubled" in feedback
    assert server.requests[1]["body"]["messages"][-2]["content"] == doubtful


def test_client_keeps_the_json_reading_when_the_model_repeats_an_ambiguous_reply(server, fast_config):
    doubtful = '{"think": "With $\\theta$ fixed,\\nu = 2 here.", "answer": "2"}'
    server.route("again", ok(doubtful), ok(doubtful))
    [result] = run(fast_config(max_parse_retries=1), [ask("again")])
    assert result.ok and result.attempts == 2
    assert result.parsed.think == "With $\\theta$ fixed,\nu = 2 here."
    assert any("JSON whitespace" in note for note in result.notes)


def test_client_leaves_a_reply_with_real_tabs_and_newlines_alone(server, fast_config, tmp_path):
    think = "Plan:\n\tcompute the sum\nThe total is 12.\n\nnext step"
    server.route("plain", ok(reply(think, "12")))
    store = Store(tmp_path / "s.sqlite")
    [result] = run(fast_config(), [ask("plain")], store)
    assert result.ok and result.parsed.think == think and result.notes == ()
    assert store.query("SELECT error FROM llm_calls") == [(None,)]
