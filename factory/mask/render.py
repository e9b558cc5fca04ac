"""The one function that decides which tokens train (DESIGN rule 8).

`render(row, tokenizer)` -> `Rendered(input_ids, labels, turn_spans, reason)`;
labels are -100 wherever the token does not train.

How: the row becomes messages (`rows.py`), the tokenizer's own chat
template renders them prefix by prefix, and the growth of the text from one
prefix to the next is that turn's character range. An assistant turn trains
from the end of the generation prompt (`<|im_start|>assistant\\n`, so the role
header never trains) to the end of its end-of-turn marker (trailing whitespace
after `<|im_end|>` stays out). The full text is tokenized once, with offsets;
a token trains only if its characters lie wholly inside a trained range, so a
token straddling a boundary (an observation's edge, a header) is masked. AFM
observation spans are removed from the trained ranges by character offset,
never by looking for the token ids of the tag text.

`train_on_observations=True` (AutoCoA's stage 3, a world model) also trains
the AFM observation spans, the content of tool turns (sharegpt `observation`,
messages `tool`; a turn flagged 0 stays out), and the user turns a row flags as
observations that train (messages `weight: 1`, sharegpt `loss: true`: the
AgentRefine convention writes the world's observations as user turns, and the
export's `--observations train` flags those that answer an action). A flagged
user turn trains like an assistant turn, from its content through its
end-of-turn marker: the world speaks the whole turn, and a model standing in
for it must learn where the turn ends. A tool turn trains its content only: the
template wraps it (`<tool_response>` ...), and that wrapping is the template's.
User turns without the flag (the task, a follow-up question) never train.
Without the switch none of this trains, whatever the rows flag.

`train_turn_suffix=True` also trains what the template writes after an
assistant turn's end-of-turn marker up to the next turn (ChatML's newline
after `<|im_end|>`): LLaMA-Factory's templates put it in the response, so its
labels carry it. Our trainer, TRL and axolotl leave it out (the default).

Truncation to `max_length` drops whole trailing turns: the kept labels are
always whole turns. When not even the first trained turn fits, the render is
empty and `reason` says why.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from .rows import Message, RenderError, Span, row_messages, row_tools
from .template import ChatText, fast_chat_text, public_chat_text

IGNORE = -100  # the label torch's cross-entropy skips


@dataclass(frozen=True)
class TurnSpan:
    role: str
    start: int  # token index of the turn's first token (a token straddling two turns goes to the later one)
    end: int  # token index just past the turn
    trained: int  # how many of its tokens train


@dataclass
class Rendered:
    input_ids: list[int]
    labels: list[int]  # IGNORE where the token does not train
    turn_spans: list[TurnSpan] = field(default_factory=list)
    reason: str | None = None  # why nothing trains (empty after truncation, no trained turn); stable, to count by

    @property
    def trained_tokens(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE)

    def __len__(self) -> int:
        return len(self.input_ids)


def render(
    row: dict[str, Any],
    tokenizer,
    max_length: int | None = None,
    train_on_observations: bool = False,
    train_turn_suffix: bool = False,
) -> Rendered:
    """Tokens and labels of one export row (sharegpt, messages or AFM; see rows.py)."""
    if not getattr(tokenizer, "is_fast", False):
        raise RenderError("render needs a fast tokenizer (it masks by character offsets via offset_mapping)")
    if not getattr(tokenizer, "chat_template", None):
        raise RenderError("the tokenizer has no chat template; set tokenizer.chat_template before rendering")
    messages = row_messages(row)
    if not messages:
        return Rendered([], [], reason="the row has no turns")
    switches = (train_on_observations, train_turn_suffix)
    tools = row_tools(row)
    text, turn_ranges, trained_ranges = _checked_layout(messages, tokenizer, switches, tools)
    _check_tools_written(messages, tokenizer, tools, text, turn_ranges, f"row {row.get('id', '?')!r}")
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(encoding["input_ids"]), encoding["offset_mapping"]
    labels = _labels(ids, offsets, trained_ranges)
    spans = _turn_spans(messages, turn_ranges, offsets, labels)
    rendered = Rendered(ids, labels, spans)
    if max_length is not None and len(ids) > max_length:
        rendered = _truncate(rendered, max_length)
    if rendered.reason is None and not rendered.trained_tokens:
        rendered.reason = "no turn trains (every assistant turn has loss=false / weight=0)"
    return rendered


def _check_tools_written(messages: list[Message], tokenizer, tools, text: str, turns: list[Span], where: str) -> None:
    """A template without tool support drops `tools` and `tool_calls` silently: the model would learn calls
    that are not in its text, or no calls at all. Refuse the row instead, naming the field."""
    for k, message in enumerate(messages):
        start, end = turns[k]
        outside = text[start:end].replace(message.content, "", 1)  # the name must be the call's, not the thought's
        if message.tool_calls and not all(call["function"]["name"] in outside for call in message.tool_calls):
            raise RenderError(
                f"{where}: messages[{k}].tool_calls: the chat template does not write tool calls "
                "(the call would vanish from the text); use a template with tool support"
            )
        if message.tool_calls and message.content.strip() and message.content not in text[start:end]:
            raise RenderError(
                f"{where}: messages[{k}].content: the chat template drops the text before a tool "
                "call (Llama 3.1's does); the reasoning would vanish: use a template that keeps it, "
                "or rows whose calls carry no text"
            )
    first = _chat(messages[: _opening_length(messages)])
    if tools and public_chat_text(tokenizer, tools)(first, False) == public_chat_text(tokenizer)(first, False):
        raise RenderError(f"{where}: tools: the chat template does not write the tools it is given")


def _checked_layout(messages: list[Message], tokenizer, switches: tuple[bool, bool], tools: list[dict] | None = None):
    """The layout from the fast template path, if it renders the whole row exactly as apply_chat_template does.
    `tools` (native tool calling) go to the template on every prefix, as a trainer hands them over."""
    public = public_chat_text(tokenizer, tools)
    fast = fast_chat_text(tokenizer, tools)
    if fast is not None:
        layout = _layout(messages, fast, switches)
        if layout[0] == public(_chat(messages)):
            return layout
    return _layout(messages, public, switches)


def _layout(messages: list[Message], chat_text: ChatText, switches: tuple[bool, bool]):
    """The full template text, each turn's character range, and the character ranges that train.

    switches: (train_on_observations, train_turn_suffix), as render takes them."""
    train_on_observations, train_turn_suffix = switches
    turn_ranges: list[Span] = []
    trained: list[Span] = []
    previous = ""
    opening = _opening_length(messages)
    for k, message in enumerate(messages):
        try:
            text = chat_text(_chat(messages[: k + 1]), False)
        except RenderError:
            if k >= opening - 1:
                raise
            turn_ranges.append((len(previous), len(previous)))  # a leading system turn the template renders
            continue  # only with the first user turn (Llama 3.1 with tools): it joins that turn's range
        if not text.startswith(previous):
            raise RenderError(
                f"the chat template renders turn {k - 1} differently once turn {k} follows; "
                "render needs a template whose output for a prefix of the conversation is a prefix of the whole"
            )
        start, end = len(previous), len(text)
        turn_ranges.append((start, end))
        if message.role == "assistant" and message.trains:
            content_start = _assistant_start(chat_text, messages, k, text, start)
            if not train_turn_suffix:  # the newline after <|im_end|> is the template's, not the model's to learn
                end = content_start + len(text[content_start:end].rstrip())
            trained += _assistant_ranges(message, text, content_start, end, train_on_observations)
        elif train_on_observations and message.observation_trains:
            trained.append(_observation_range(message, text, start, end, k, train_turn_suffix))
        previous = text
    return previous, turn_ranges, trained


def _opening_length(messages: list[Message]) -> int:
    """The leading system turns and the first user turn: a template that puts the tools into the first user
    turn (Llama 3.1's) refuses to render the system turns alone, and renders them with it."""
    leading = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    return leading + 1 if 0 < leading < len(messages) and messages[leading].role == "user" else 1


def _chat(messages: list[Message]) -> list[dict]:
    return [m.chat() for m in messages]


def _assistant_start(chat_text: ChatText, messages: list[Message], k: int, text: str, turn_start: int) -> int:
    """Where the assistant's own text begins: just after the template's generation prompt."""
    if k > 0:
        prompt = chat_text(_chat(messages[:k]), True)
        if text.startswith(prompt) and len(prompt) >= turn_start:
            return len(prompt)
    # No usable generation prompt (a conversation opening with the assistant, an
    # odd template): the content itself, located in the turn, marks the start.
    return _find_content(messages[k], text, turn_start, len(text), k)[0]


def _assistant_ranges(message: Message, text: str, start: int, end: int, train_on_observations: bool) -> list[Span]:
    if not message.observation_spans or train_on_observations:
        return [(start, end)] if end > start else []
    if text[start : start + len(message.content)] != message.content:
        raise RenderError("the chat template changed the assistant text, so observation_spans cannot be placed in it")
    ranges, cursor = [], start
    for span_start, span_end in message.observation_spans:
        if span_start + start > cursor:
            ranges.append((cursor, span_start + start))
        cursor = max(cursor, span_end + start)
    if end > cursor:
        ranges.append((cursor, end))
    return ranges


def _observation_range(message: Message, text: str, start: int, end: int, k: int, train_turn_suffix: bool) -> Span:
    """A tool turn's content; a flagged user turn's content through its end-of-turn marker (and, with
    train_turn_suffix, what the template writes after it), as an assistant turn trains."""
    content_start, content_end = _find_content(message, text, start, end, k)
    if message.role == "tool":
        return content_start, content_end
    return content_start, end if train_turn_suffix else content_start + len(text[content_start:end].rstrip())


def _find_content(message: Message, text: str, start: int, end: int, k: int) -> Span:
    at = text.find(message.content, start, end) if message.content else -1
    if at < 0:
        raise RenderError(f"turn {k} ({message.role}): the chat template does not write its content verbatim")
    return at, at + len(message.content)


def _labels(ids: list[int], offsets, trained: list[Span]) -> list[int]:
    """A token trains when its characters lie wholly inside one trained range (ranges are sorted, disjoint)."""
    labels, r = [], 0
    for token_id, (start, end) in zip(ids, offsets):
        while r < len(trained) and trained[r][1] <= start:
            r += 1
        inside = r < len(trained) and trained[r][0] <= start and end <= trained[r][1] and end > start
        labels.append(token_id if inside else IGNORE)
    return labels


def _turn_spans(messages: list[Message], turn_ranges: list[Span], offsets, labels: list[int]) -> list[TurnSpan]:
    starts = [start for start, _ in offsets]
    bounds = [bisect_left(starts, start) for start, _ in turn_ranges] + [len(starts)]
    return [
        TurnSpan(m.role, bounds[i], bounds[i + 1], sum(1 for x in labels[bounds[i] : bounds[i + 1]] if x != IGNORE))
        for i, m in enumerate(messages)
    ]


def _truncate(rendered: Rendered, max_length: int) -> Rendered:
    """Keep whole turns up to the last trained turn that ends within max_length."""
    fitting = [i for i, span in enumerate(rendered.turn_spans) if span.end <= max_length and span.trained]
    if not fitting:
        # A stable reason (no per-row numbers), so that callers can count skipped rows by it.
        return Rendered([], [], [], reason=f"the first trained turn does not fit max_length={max_length}")
    spans = rendered.turn_spans[: fitting[-1] + 1]
    cut = spans[-1].end
    return Rendered(rendered.input_ids[:cut], rendered.labels[:cut], spans)
