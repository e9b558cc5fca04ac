"""AFM's own trainer keeps every distilled row and masks exactly the observation spans `factory.mask.render` masks.

AFM trains with a fork of LLaMA-Factory that lives inside OPPO-PersonalAI/Agent_Foundation_Models (not on
PyPI; its code may not be committed here). The `fork_*` functions below are an independent re-implementation
of what it does to an alpaca row, read at commit 8f9451697abbde18aa91241d6ba5171eab660261:

* LLaMA-Factory/src/llamafactory/data/converter.py, AlpacaDatasetConverter: the user turn is
  instruction + "\\n" + input (input only when non-empty), the response is `output`;
* LLaMA-Factory/src/llamafactory/data/template.py, the "qwen" template and Template._encode /
  _convert_elements_to_ids: each formatted piece is encoded on its own; default system prompt;
* LLaMA-Factory/src/llamafactory/data/processor/supervised.py, IgnoreObsSupervisedDatasetProcessor:
  _validate_example (equal counts and proper nesting of "<observation>" / "</observation>" in the text),
  preprocess_dataset (drops a row whose span never closes when the bare response is encoded), and
  _mask_search_result_tokens (labels -100 from the token ids of "<observation" through those of
  "observation>\\n\\n"; the row is dropped when the span is still open at the end);
* AFM/train/code_agent/sft/sft_qwen2.5_7b.sh (and the web agent's): --template qwen
  --ignore_observation true --ignore_observation_token observation, no packing, cutoff 32768.

The rule matches token ids, so it depends on pre-tokenization (docs/afm_format.md): with Qwen2's
pre-tokenizer, which AFM's models use, ">\\n\\n" is one piece both alone and in context; with GPT-2's
(our tiny tokenizer's) the blank line splits differently in context and no span ever closes.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from afm_rows import code_rows, mas_rows  # noqa: E402

from factory.mask.render import render  # noqa: E402
from factory.mask.tiny import SAMPLE_TEXT, SPECIAL_TOKENS, tiny_tokenizer  # noqa: E402

IGNORE = -100
MARK = "observation"  # --ignore_observation_token
QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
# Qwen2's pre-tokenizer pattern (its tokenizer.json), the one AFM's Qwen2.5 models tokenize with.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_TEMPLATE = (  # ChatML as the fork's qwen template lays it out, default system prompt included
    "{%- if not messages or messages[0]['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\n" + QWEN_SYSTEM + "<|im_end|>\\n' -}}{%- endif -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


# --- the fork's rule, re-implemented -------------------------------------------------------------


def fork_text_is_valid(response: str) -> bool:
    """_validate_example: as many opening as closing tags, and no closing tag before its opening one."""
    opening, closing = f"<{MARK}>", f"</{MARK}>"
    if response.count(opening) != response.count(closing):
        return False
    depth, i = 0, 0
    while i < len(response):
        if response.startswith(opening, i):
            depth, i = depth + 1, i + len(opening)
        elif response.startswith(closing, i):
            if depth == 0:
                return False
            depth, i = depth - 1, i + len(closing)
        else:
            i += 1
    return depth == 0


def fork_mask(ids: list[int], tok) -> tuple[list[int], bool]:
    """_mask_search_result_tokens: (labels, the last span closed)."""
    start = tok.encode(f"<{MARK}", add_special_tokens=False)
    end = tok.encode(f"{MARK}>\n\n", add_special_tokens=False)
    labels, inside, i = list(ids), False, 0
    while i < len(ids):
        if not inside and ids[i : i + len(start)] == start:
            labels[i : i + len(start)] = [IGNORE] * len(start)
            inside, i = True, i + len(start)
        elif inside and ids[i : i + len(end)] == end:
            labels[i : i + len(end)] = [IGNORE] * len(end)
            inside, i = False, i + len(end)
        else:
            if inside:
                labels[i] = IGNORE
            i += 1
    return labels, not inside


def fork_encode(row: dict, tok) -> tuple[list[int], list[int]] | None:
    """preprocess_dataset + _encode_data_example for one alpaca row; None when the fork drops it."""
    response = row["output"]
    query = "\n".join(part for part in (row["instruction"], row.get("input")) if part)
    if not fork_text_is_valid(response) or not fork_mask(tok.encode(response), tok)[1]:
        return None
    encode = lambda text: tok.encode(text, add_special_tokens=False)  # noqa: E731
    source = encode(f"<|im_start|>system\n{QWEN_SYSTEM}<|im_end|>\n")
    source += encode(f"<|im_start|>user\n{query}<|im_end|>\n<|im_start|>assistant\n")
    target = encode(f"{response}<|im_end|>\n")
    labels, closed = fork_mask(target, tok)
    return (source + target, [IGNORE] * len(source) + labels) if closed else None


# --- tokenizers ------------------------------------------------------------------------------------


def qwen_like_tokenizer():
    """The tiny tokenizer's recipe (byte-level BPE on factory.mask.tiny.SAMPLE_TEXT) with Qwen2's pre-tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=2000, min_frequency=1, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=alphabet, show_progress=False)  # fmt: skip
    bpe.train_from_iterator([SAMPLE_TEXT], trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  additional_special_tokens=["<|im_start|>"])  # fmt: skip
    tok.chat_template = QWEN_TEMPLATE
    return tok


@pytest.fixture(scope="module")
def qwen():
    return qwen_like_tokenizer()


# --- the comparison ---------------------------------------------------------------------------------


def mismatches(row: dict, tok) -> list[str]:
    """What differs between the fork's labels and factory.mask.render's for one row (empty: they agree)."""
    fork = fork_encode(row, tok)
    if fork is None:
        return ["the fork drops the row (an observation span never closes)"]
    ours = render(row, tok)
    if fork[0] != ours.input_ids:
        return ["the token ids differ"]
    # The one designed difference: the fork's qwen template puts the newline after <|im_end|> in the
    # target and trains it; factory.mask.render leaves that template newline out (docs/afm_format.md).
    newline = tok.encode("\n", add_special_tokens=False)
    if fork[0][-1:] != newline or fork[1][-1] == IGNORE or ours.labels[-1] != IGNORE:
        return ["the last token is not the trained newline after <|im_end|>"]
    return [
        f"token {i} {tok.decode([token])!r}: fork {'trains' if a != IGNORE else 'masks'}, ours the other"
        for i, (token, a, b) in enumerate(zip(fork[0][:-1], fork[1][:-1], ours.labels[:-1]))
        if (a == IGNORE) != (b == IGNORE)
    ]


def kept_and_matching(rows: list[dict], tok) -> float:
    return sum(not mismatches(row, tok) for row in rows) / len(rows)


ROWS = {
    f"{variant}-{i}": row
    for variant, rows in (("code", code_rows()), ("mas", mas_rows()))
    for i, row in enumerate(rows)
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_fork_keeps_the_row_and_masks_exactly_our_observation_spans(qwen, name):
    row = ROWS[name]
    assert row["output"].count("<observation>") >= 2
    assert mismatches(row, qwen) == []
    fork_ids, fork_labels = fork_encode(row, qwen)
    masked = qwen.decode([t for t, label in zip(fork_ids, fork_labels) if label == IGNORE])
    assert masked.count("</observation>\n\n") == row["output"].count("</observation>")


def test_all_rows_kept_and_masked_alike(qwen):
    assert kept_and_matching(list(ROWS.values()), qwen) == 1.0


def test_an_observation_that_gets_a_label_fails_the_comparison(qwen):
    row = ROWS["code-0"]
    spans = row["observation_spans"]
    unmasked = {**row, "observation_spans": spans[1:]}  # one observation would train in ours
    found = mismatches(unmasked, qwen)
    assert found and all("fork masks" in problem for problem in found)
    widened = {**row, "observation_spans": [[s - 1, e] for s, e in spans]}  # the old span: "\n<observation>..."
    assert any("fork trains" in problem for problem in mismatches(widened, qwen))
    short = {**row, "observation_spans": [[s, e - 2] for s, e in spans]}  # the blank line would train
    assert any("fork masks" in problem for problem in mismatches(short, qwen))


def test_a_row_whose_observation_is_not_followed_by_a_blank_line_is_dropped(qwen):
    row = ROWS["mas-0"]
    output = row["output"].replace("</observation>\n\n", "</observation>\n")
    squeezed = {**row, "output": output, "observation_spans": None}
    assert fork_encode(squeezed, qwen) is None
    assert mismatches(squeezed, qwen) == ["the fork drops the row (an observation span never closes)"]


def test_the_rule_depends_on_pre_tokenization(qwen):
    """GPT-2-style pre-tokenization (the tiny tokenizer) cuts the blank line after </observation> as two
    pieces in context but one alone, so AFM's rule never closes a span: every row is dropped. The same
    text under Qwen2's pre-tokenization is kept. Train AFM rows with a Qwen2/Llama-3-style tokenizer."""
    tiny = tiny_tokenizer()
    in_context = tiny.encode("</observation>\n\n<reflection>", add_special_tokens=False)
    alone = tiny.encode("observation>\n\n", add_special_tokens=False)
    assert not any(in_context[i : i + len(alone)] == alone for i in range(len(in_context)))
    assert kept_and_matching(list(ROWS.values()), tiny) == 0.0
    assert kept_and_matching(list(ROWS.values()), qwen) == 1.0


def test_a_row_without_stored_spans_is_masked_like_the_fork_too(qwen):
    for row in ROWS.values():  # factory.mask.rows.observation_spans finds the same spans the distiller stored
        assert mismatches({**row, "observation_spans": None}, qwen) == []
