"""Export rows -> `Message`s: what each turn says and whether it may train.

Formats are told apart by their keys (the export contract in docs/DESIGN.md):

* `conversations` — sharegpt as this project writes it and as AgentInstruct,
  AgentRefine and LLaMA-Factory publish it: `from` in system / human / gpt /
  observation / function_call, optional `loss` (missing: gpt trains), optional
  row-level `system`. Observations inside human turns (the AgentRefine
  convention) are user turns: they train only under `train_on_observations`
  and only when the row flags them (`loss: true`, see `observation_trains`).
* `messages` — OpenAI / TRL / axolotl: `weight` 0|1 (or `train`) on assistant
  messages, missing: trains. Native tool calling (factory/export/native.py):
  assistant `tool_calls` (OpenAI's shape, `arguments` a JSON string or a dict),
  `tool` messages with `tool_call_id`, and the row's `tools` (a list of
  JSON-schema functions, or that list as JSON text), all handed to the chat
  template; an assistant turn whose only content is its call trains. A `weight`
  on a user or tool message says whether that observation trains under
  `train_on_observations` (the export's `--observations train` writes it).

In every format an assistant turn whose content is empty or blank never
trains (it stays in context, masked): training it would teach the model to
answer with the end-of-turn marker alone.
* `instruction` + `output` (AFM single string, alpaca-style) or `prompt` +
  `completion` (the store's columns): one user turn and one assistant turn whose
  `observation_spans` (character offsets into the output) stay out of the loss;
  without them the `<observation>` blocks are found by the AFM scanner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..coa.afm.blocks import parse_blocks
from ..coa.afm.render import render_single
from ..errors import FactoryError

Span = tuple[int, int]

SHAREGPT_ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "function_call": "assistant",
    "observation": "tool",
    "tool": "tool",
}
MESSAGE_ROLES = ("system", "user", "assistant", "tool")


class RenderError(FactoryError):
    """A row cannot be rendered; the message names the row and the field."""


@dataclass(frozen=True)
class Message:
    role: str  # system | user | assistant | tool
    content: str
    trains: bool = False  # an assistant turn inside the loss
    observation_spans: tuple[Span, ...] = ()  # character ranges of `content` that are environment output
    tool_calls: tuple[dict, ...] = ()  # native calls, `arguments` a dict (as chat templates take them)
    tool_call_id: str | None = None  # a tool message: the call it answers
    name: str | None = None  # a tool message: the tool's name (Llama's and Mistral's templates read it)
    observation_trains: bool = False  # environment output that trains under train_on_observations

    def chat(self) -> dict[str, Any]:
        """The message as a chat template takes it."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = list(self.tool_calls)
        out.update({k: v for k, v in (("tool_call_id", self.tool_call_id), ("name", self.name)) if v})
        return out


def row_tools(row: dict[str, Any]) -> list[dict] | None:
    """The row's `tools` (JSON-schema functions), as a list; None when it offers none."""
    tools = row.get("tools")
    if isinstance(tools, str):
        import json

        try:
            tools = json.loads(tools) if tools.strip() else None
        except ValueError:
            raise RenderError(f"row {row.get('id', '?')!r}: tools is not JSON") from None
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise RenderError(f"row {row.get('id', '?')!r}: tools must be a list of function schemas")
    return tools or None


def row_messages(row: dict[str, Any]) -> list[Message]:
    """The turns of any export row, in order; raises RenderError naming the bad field."""
    where = f"row {row.get('id', '?')!r}"
    if "conversations" in row:
        messages = _sharegpt(row["conversations"], where)
        system = row.get("system")
        if isinstance(system, str) and system and (not messages or messages[0].role != "system"):
            messages.insert(0, Message("system", system))
        return messages
    if "messages" in row:
        return _openai(row["messages"], where)
    if "output" in row and "instruction" in row:
        prompt = _text(row["instruction"], f"{where}: instruction")
        extra = _text(row.get("input") or "", f"{where}: input")
        return _single(row, prompt + ("\n" + extra if extra else ""), row["output"], "output", where)
    if "completion" in row and isinstance(row.get("prompt"), str):
        return _single(row, row["prompt"], row["completion"], "completion", where)
    keys = ", ".join(sorted(row)) or "none"
    raise RenderError(
        f"{where}: unknown format (keys: {keys}); expected conversations, messages, instruction+output or prompt+completion"
    )


def _sharegpt(turns: Any, where: str) -> list[Message]:
    if not isinstance(turns, list):
        raise RenderError(f"{where}: conversations must be a list, not {type(turns).__name__}")
    out = []
    for i, turn in enumerate(turns):
        field = f"{where}: conversations[{i}]"
        speaker = turn.get("from", turn.get("role")) if isinstance(turn, dict) else None
        if speaker not in SHAREGPT_ROLES:
            raise RenderError(f"{field}.from {speaker!r} is not one of {', '.join(SHAREGPT_ROLES)}")
        role = SHAREGPT_ROLES[speaker]
        content, flag = _text(turn.get("value", turn.get("content")), f"{field}.value"), turn.get("loss")
        trains = _trains(role, content, flag, f"{field}.loss")
        out.append(Message(role, content, trains, observation_trains=observation_trains(role, content, flag)))
    return out


def _openai(messages: Any, where: str) -> list[Message]:
    if not isinstance(messages, list):
        raise RenderError(f"{where}: messages must be a list, not {type(messages).__name__}")
    out = []
    for i, message in enumerate(messages):
        field = f"{where}: messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in MESSAGE_ROLES:
            raise RenderError(f"{field}.role {role!r} is not one of {', '.join(MESSAGE_ROLES)}")
        calls = template_tool_calls(message.get("tool_calls"), f"{field}.tool_calls")
        content = _content(message.get("content"), f"{field}.content")
        weight = message.get("weight", message.get("train"))
        trains = _trains(role, content or ("call" if calls else ""), weight, f"{field}.weight")
        seen = observation_trains(role, content, weight)
        out.append(Message(role, content, trains, (), calls, message.get("tool_call_id"), message.get("name"), seen))
    return out


def template_tool_calls(calls: Any, field: str) -> tuple[dict, ...]:
    """OpenAI tool calls with `arguments` parsed to a dict (a chat template writes `arguments | tojson`)."""
    if not calls:
        return ()
    if not isinstance(calls, list):
        raise RenderError(f"{field}: must be a list")
    import json

    out = []
    for i, entry in enumerate(calls):
        function = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise RenderError(f"{field}[{i}]: a call needs function.name")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                raise RenderError(f"{field}[{i}].function.arguments: not JSON") from None
        out.append({**entry, "type": entry.get("type", "function"),
                    "function": {"name": function["name"], "arguments": arguments or {}}})  # fmt: skip
    return tuple(out)


def _single(row: dict[str, Any], prompt: str, output: Any, field: str, where: str) -> list[Message]:
    output = _text(output, f"{where}: {field}")
    spans = row.get("observation_spans")
    if spans is None:
        found = observation_spans(output)
    else:
        found = _spans(spans, len(output), f"{where}: observation_spans")
    messages = [Message("user", prompt), Message("assistant", output, _trains("assistant", output, None, ""), found)]
    system = row.get("system")
    if isinstance(system, str) and system:
        messages.insert(0, Message("system", system))
    return messages


def observation_spans(output: str) -> tuple[Span, ...]:
    """The spans the coa renderer would have stored for `output`: what AFM's trainer masks.

    A completion in the canonical layout is re-rendered by
    factory.coa.afm.render_single itself, so the spans are its spans. Any other
    text gets AFM's `ignore_observation` rule by position (docs/afm_format.md):
    from `<observation` through the blank line after `</observation>` when there
    is one; the whitespace before the block stays the model's.
    """
    blocks = parse_blocks(output)
    rendered = render_single("", blocks)
    if rendered.completion == output:
        return rendered.observation_spans
    spans: list[Span] = []
    for block in blocks:
        if block.tag != "observation":
            continue
        start, end = block.start, block.end + (2 if output.startswith("\n\n", block.end) else 0)
        if spans and start <= spans[-1][1]:
            start = spans.pop()[0]
        spans.append((start, end))
    return tuple(spans)


def _spans(spans: Any, limit: int, field: str) -> tuple[Span, ...]:
    if isinstance(spans, str):  # the store keeps JSON text
        import json

        try:
            spans = json.loads(spans)
        except ValueError:
            raise RenderError(f"{field}: not JSON") from None
    out = []
    for span in spans if isinstance(spans, (list, tuple)) else [spans]:
        ok = isinstance(span, (list, tuple)) and len(span) == 2 and all(isinstance(x, int) for x in span)
        if not ok or not 0 <= span[0] <= span[1] <= limit:
            raise RenderError(f"{field}: {span!r} is not a [start, end] range within the output (length {limit})")
        out.append((span[0], span[1]))
    return tuple(sorted(out))


def _trains(role: str, content: str, flag: Any, field: str) -> bool:
    """An assistant turn trains when its flag allows and it says something: an empty (or blank)
    assistant turn stays in context, masked, since training it would teach the model to answer
    with nothing but the end-of-turn marker."""
    return role == "assistant" and _flag(flag, field) and bool(content.strip())


def observation_trains(role: str, content: str, flag: Any) -> bool:
    """Whether a turn is an observation that trains under train_on_observations (AutoCoA's stage 3).

    A tool turn is the environment's output: it trains unless its flag says 0 (the rule before user
    observations could train: a tool turn with no flag trains). A user turn trains only when the row
    flags it: the AgentRefine convention writes the world's observations as user turns, beside the task
    and other user text, so only the row can tell them apart (the export's `--observations train` flags
    exactly the observations that answer an action). Never an empty tool turn nor a blank user turn (a
    tool turn of whitespace trained before; the export flags it 0). A flag that is not 0 or 1 changes
    nothing here (non-assistant flags were never checked, and a row that rendered before still renders)."""
    if role == "tool":
        return not (flag is not None and flag == 0) and bool(content)
    return role == "user" and flag is not None and flag == 1 and bool(content.strip())


def _flag(value: Any, field: str) -> bool:
    """loss / weight / train: missing means the assistant turn trains."""
    if value is None:
        return True
    if isinstance(value, bool) or value in (0, 1):
        return bool(value)
    raise RenderError(f"{field}: {value!r} must be true/false or 0/1")


def _content(value: Any, field: str) -> str:
    """OpenAI content: a string, null (empty; a turn with tool_calls is refused before), or a list of text parts."""
    if value is None:
        return ""
    if isinstance(value, list):
        parts = [p.get("text") for p in value if isinstance(p, dict) and p.get("type") == "text"]
        if len(parts) == len(value) and all(isinstance(p, str) for p in parts):
            return "".join(parts)
        raise RenderError(f"{field}: only text parts can be rendered")
    return _text(value, field)


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise RenderError(f"{field} must be a string, not {type(value).__name__}")
    return value
