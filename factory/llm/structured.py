"""Structured output: a JSON schema sent with the request, the reply validated.

A response model is a pydantic class or a plain JSON-schema dict. The schema is
sent as `response_format` json_schema where the backend supports it (llama.cpp,
vLLM and SGLang decode under it), as JSON mode plus the schema in the prompt, or
as the schema in the prompt alone; the reply is always validated here.
LaTeX written with single backslashes inside its strings is repaired first
(latex_json.py), never in fields the schema marks as code (code_fields); where
that is ambiguous the model is asked again.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import jsonschema
import orjson
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from ..prompts import render_prompt
from .latex_json import Scan, repair_latex_escapes


class OutputInvalid(Exception):
    """The reply is not JSON or does not match the schema; the message says how."""


class LatexAmbiguous(OutputInvalid):
    """Escapes like `\\nu` that may be LaTeX or JSON whitespace: the message asks the model to escape them."""


class Parsed(NamedTuple):
    """A validated reply: the value, its JSON form, and notes on repairs made to the text."""

    value: Any
    jsonable: Any
    notes: tuple[str, ...] = ()


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve local `$ref`s into their definitions: some backends' grammar
    compilers ignore `$defs`. Recursive models keep their refs."""
    defs = schema.get("$defs", {})

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.rsplit("/", 1)[-1]
                if name in seen or name not in defs:
                    return node
                merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
                return resolve(merged, seen | {name})
            return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        return node

    out = resolve(copy.deepcopy(schema), frozenset())
    if any("$ref" in s for s in _walk_strings(out)):
        out["$defs"] = defs  # recursion left refs in place: keep their targets
    return out


def _walk_strings(node: Any):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _walk_strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk_strings(item)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def load_reply(text: str, code_fields: frozenset[str] = frozenset()) -> tuple[Any, Scan]:
    """Parse a reply as JSON, tolerating code fences and prose around one object, after
    LaTeX backslashes in its strings are repaired (the Scan says which); strings under a
    key in `code_fields` keep every valid JSON escape."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1)
    scan = repair_latex_escapes(stripped, code_fields)
    try:
        return orjson.loads(scan.text), scan
    except orjson.JSONDecodeError as first_error:
        start, end = stripped.find("{"), stripped.rfind("}")
        if 0 <= start < end:
            scan = repair_latex_escapes(stripped[start : end + 1], code_fields)
            try:
                return orjson.loads(scan.text), scan
            except orjson.JSONDecodeError:
                pass
        raise OutputInvalid(f"not valid JSON ({first_error})") from None


# Fields whose strings are programs: a newline before "eq = 1" there is meant, never `\\neq`.
# A property is code when its schema gives a `contentMediaType` other than prose or TeX
# (JSON Schema's keyword; on a pydantic field: json_schema_extra={"contentMediaType": "text/x-python"}),
# or when its name says so: code, program, script, snippet, source_code, or *_code, *_program, *_script.
_CODE_NAME = re.compile(r"(?:^|_)(?:code|program|script)$|^(?:snippet|source_code)$")
_PROSE_MEDIA = frozenset({"text/plain", "text/markdown", "text/x-tex", "text/x-latex", "application/x-latex"})


def code_fields(schema: Any) -> frozenset[str]:
    """The property names, anywhere in a JSON schema, whose string values are code."""
    names: set[str] = set()
    if isinstance(schema, dict):
        properties = schema.get("properties")
        for name, sub in properties.items() if isinstance(properties, dict) else ():
            media = sub.get("contentMediaType") if isinstance(sub, dict) else None
            if _CODE_NAME.search(name.lower()) or (isinstance(media, str) and media.lower() not in _PROSE_MEDIA):
                names.add(name)
        for value in schema.values():
            names |= code_fields(value)
    elif isinstance(schema, list):
        for item in schema:
            names |= code_fields(item)
    return frozenset(names)


def latex_notes(scan: Scan) -> tuple[str, ...]:
    """What the reply's text needed, for the Result and the call log."""
    notes = []
    if scan.repaired:
        notes.append(f"LaTeX backslashes doubled in JSON strings ({len(scan.repaired)}): {_listed(scan.repaired)}")
    if scan.ambiguous:
        kept = _listed(command for _, command in scan.ambiguous)
        notes.append(f"escapes read as JSON whitespace though they may be LaTeX: {kept}")
    return tuple(notes)


def _listed(commands) -> str:
    return ", ".join(dict.fromkeys(commands))


@dataclass(frozen=True)
class OutputSpec:
    """A response model compiled once: its name, wire schema and validator."""

    name: str
    schema: dict[str, Any]
    model: type[BaseModel] | None
    schema_json: str = ""  # canonical JSON of the schema, for hashing and logging
    code_keys: frozenset[str] = frozenset()  # properties whose strings are code: no LaTeX repair
    # A schema-only spec's validator, built once: jsonschema.validate checks the schema against its
    # metaschema and builds a new validator on every call (~10x the cost of validating the reply).
    validator: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema_json", orjson.dumps(self.schema, option=orjson.OPT_SORT_KEYS).decode())
        object.__setattr__(self, "code_keys", code_fields(self.schema))
        if self.model is None and self.validator is None:
            cls = jsonschema.validators.validator_for(self.schema, default=jsonschema.Draft202012Validator)
            object.__setattr__(self, "validator", cls(self.schema))

    def parse(self, text: str | None, settle: bool = False) -> Parsed:
        """Read and check a reply. Ambiguous LaTeX escapes raise LatexAmbiguous (ask again),
        unless `settle`: then they keep their JSON meaning (the last try, or a reply already accepted)."""
        if not text or not text.strip():
            raise OutputInvalid("the reply was empty")
        data, scan = load_reply(text, self.code_keys)
        if scan.ambiguous and not settle:
            raise LatexAmbiguous(latex_feedback(scan))
        value, jsonable = self.check(data)
        return Parsed(value, jsonable, latex_notes(scan))

    def check(self, data: Any) -> tuple[Any, Any]:
        """Return (value, jsonable value): a model instance or checked dict, and its JSON form."""
        if self.model is not None:
            try:
                value = self.model.model_validate(data)
            except ValidationError as exc:
                raise OutputInvalid(_short_pydantic_error(exc)) from None
            return value, value.model_dump(mode="json")
        error = best_match(self.validator.iter_errors(data))  # the error jsonschema.validate would raise
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            raise OutputInvalid(f"at {where}: {error.message}") from None
        return data, data


def _short_pydantic_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "; ".join(parts) + more


@lru_cache(maxsize=256)
def _spec_for_model(model: type[BaseModel]) -> OutputSpec:
    # A model may offer a trimmed wire schema (e.g. without fields the LLM must not fill);
    # its replies are still validated by the model itself.
    schema = model.llm_schema() if hasattr(model, "llm_schema") else model.model_json_schema()
    return OutputSpec(model.__name__, inline_refs(schema), model)


@lru_cache(maxsize=256)
def _spec_for_schema(schema_json: bytes) -> OutputSpec:
    schema = orjson.loads(schema_json)
    jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title", "response")))[:64]
    return OutputSpec(name, inline_refs(schema), None)


def output_spec(response_model: type[BaseModel] | dict[str, Any]) -> OutputSpec:
    if isinstance(response_model, dict):
        return _spec_for_schema(orjson.dumps(response_model, option=orjson.OPT_SORT_KEYS))
    if isinstance(response_model, type) and issubclass(response_model, BaseModel):
        return _spec_for_model(response_model)
    raise TypeError(f"response_model must be a pydantic model class or a JSON schema dict, not {response_model!r}")


def response_format(spec: OutputSpec, mode: str) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": spec.name, "schema": spec.schema}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def with_schema_instruction(messages: list[dict[str, Any]], spec: OutputSpec) -> list[dict[str, Any]]:
    """Add the schema to the prompt (for JSON mode and prompt-only backends)."""
    instruction = render_prompt("llm/schema_instruction", schema=spec.schema_json)
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0], content=f"{messages[0].get('content') or ''}\n\n{instruction}".strip())
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def latex_feedback(scan: Scan) -> str:
    where = (f'{command} in "{key}"' if key else command for key, command in scan.ambiguous)
    return render_prompt("llm/latex_escapes", found=_listed(where))


def feedback_messages(reply_text: str | None, error: str) -> list[dict[str, Any]]:
    """The turn pair that asks the model to fix a reply that failed validation."""
    return [
        {"role": "assistant", "content": reply_text or ""},
        {"role": "user", "content": render_prompt("llm/schema_feedback", error=error)},
    ]
