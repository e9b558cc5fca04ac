"""Config base: pydantic models with extra="forbid", read from YAML (the one YAML reader of the tree).

A bad config fails with one line naming the file, the field and the problem.
Every stage's config section derives from StrictModel and lives beside its stage;
factory/run_config.py gathers them into the file a run reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .errors import ConfigError


class StrictModel(BaseModel):
    """Base for every config section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul_bytes(cls, value):
        """No config text holds a NUL byte (YAML can write one as "\\0"); as a path it is a traceback deep in
        the OS layer, as a model name or prompt a request no endpoint takes."""
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("contains a NUL byte")
        return value


M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: ValidationError, source: str, flags: Mapping[str, str] | None = None) -> str:
    """One line: `source: field 'a.b': problem (and N more problems)`; `field 'a.b' (--flag)` where `flags`
    names the command-line flag the value came from (by its key or a section above it)."""
    errors = exc.errors()
    first = errors[0]
    field = ".".join(str(part) for part in first["loc"]) or "(top level)"
    keys = [key for key in (flags or {}) if field == key or field.startswith(key + ".")]
    named = f"field '{field}'" + (f" ({flags[max(keys, key=len)]})" if keys else "")  # type: ignore[index]
    # pydantic prefixes a validator's own message with "Value error, "; the user needs only the message.
    message = f"{source}: {named}: {first['msg'].removeprefix('Value error, ')}"
    if first["type"] == "extra_forbidden":
        message = f"{source}: {named}: unknown field (check the spelling)"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return message


def validate_config(model: type[M], data: object, source: str, flags: Mapping[str, str] | None = None) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source, flags)) from None


MAX_CONFIG_BYTES = 1 << 20  # a run config is a few KB; PyYAML takes minutes over a 100 MB line
MAX_DEPTH = 64  # the deepest config section is 5 levels; PyYAML recurses per level and dies near 1,000


class ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader with two refusals it lacks: a key given twice in one mapping (YAML says keys
    are unique; PyYAML keeps the last one silently, so `run_dir:` twice ran in the second folder), and
    nesting deeper than MAX_DEPTH (a RecursionError traceback otherwise)."""

    depth = 0

    def compose_node(self, parent, index):
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        first_line: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *defaults` may be overridden key by key
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                earlier = first_line.get(key)
            except TypeError:  # an unhashable key: PyYAML's own error names it
                continue
            if earlier is not None:
                problem = f"key {key!r} given twice (first at line {earlier + 1})"
                raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
            first_line[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


def read_yaml_file(path: Path, what: str = "config") -> object:
    """The parsed YAML of `path`; any unreadable, non-UTF-8, oversized or invalid file is one ConfigError line."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: {size / 2**20:.1f} MiB is not a {what} (at most {MAX_CONFIG_BYTES >> 20} MiB)")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at line {line}); save the {what} as UTF-8"
        ) from None
    try:
        return yaml.load(text, Loader=ConfigLoader)  # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())  # some YAML errors span lines
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None


def read_yaml_mapping(path: Path, what: str = "config") -> dict:
    """The YAML mapping at the top of `path` (an empty file is an empty mapping); anything else is one line."""
    data = read_yaml_file(path, what)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def load_yaml_config(model: type[M], path: str | Path) -> M:
    path = Path(path)
    return validate_config(model, read_yaml_mapping(path), str(path))
