"""The one declaration of each export format; every list of formats is derived from it.

A format is a `FormatSpec` here: its name (the `--format` choice, the data folder, the config key), why
an export may hold none of its rows (`empty`), what a kept row missing from it means (`left_out`, for
formats that write one row per trajectory), what it needs first (`needs`), and where its writer lives
(`writer`, "module:function" read when the format is written, so this module imports nothing heavy),
and the function that writes its part of the dataset card (`snippet`). `FormatName` (the config's
Literal), `FORMATS` and `ALL_FORMATS` come from here. Before this registry, adding a format touched the
Literal and the tuple kept in sync by hand, the writer's branch, the empty-format message (a KeyError when
forgotten), the left-out notes and the card's snippet branch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Literal


@dataclass(frozen=True)
class FormatSpec:
    name: str
    empty: str  # why an export holds none of its rows
    writer: str  # "module:function" -> (store, selection, options, settings) -> SplitWriter
    left_out: str | None = None  # one row per kept trajectory: what a missing one means (None: not compared)
    needs: str | None = None  # an option the format cannot be written without, e.g. "tokenizer"
    needs_message: str = ""
    in_all: bool = True  # written by "all" (the interchange formats are asked for by name)
    snippet: str | None = None  # "module:function" -> (format files, path, repo id, file type) -> the card's text

    def card_snippet(self, *args: Any) -> str | None:
        if self.snippet is None:
            return None
        module, function = self.snippet.split(":")
        return getattr(importlib.import_module(module), function)(*args)

    def split_writer(self, *args: Any) -> Callable:
        module, function = self.writer.split(":")
        return getattr(importlib.import_module(module), function)(*args)


SNIPPETS = "factory.export.snippets"
SPECS: tuple[FormatSpec, ...] = (
    FormatSpec("sharegpt", "no rows in the turn order LLaMA-Factory's sharegpt reader accepts", "factory.export.consumers:sql_writer",
               left_out="turn order LLaMA-Factory's sharegpt reader cannot read, or native tool calls: see openai"),
    FormatSpec("messages", "no rows with turns", "factory.export.consumers:sql_writer",
               left_out="no turns, or native tool calls: see openai", snippet=f"{SNIPPETS}:messages_snippet"),
    FormatSpec("afm", "no AFM rows: only coa/import trajectories have the single-string form",
               "factory.export.consumers:sql_writer", snippet=f"{SNIPPETS}:afm_snippet"),
    FormatSpec("llamafactory", "no rows with a gpt turn that trains", "factory.export.consumers:llamafactory_writer",
               snippet=f"{SNIPPETS}:llamafactory_snippet"),
    FormatSpec("trl", "no row renders with a trained token", "factory.export.consumers:trl_writer", needs="tokenizer",
               needs_message="the trl format is pre-tokenized: name the tokenizer (--tokenizer PATH_OR_NAME)",
               snippet=f"{SNIPPETS}:trl_card_snippet"),
    FormatSpec("openai", "no row converts to native tool calls with an assistant message that trains",
               "factory.export.consumers:openai_writer", snippet=f"{SNIPPETS}:openai_snippet"),
    FormatSpec("preference", "no preference pairs: refine mistakes with their correction, coa when-to-act pairs",
               "factory.export.preference:preference_writer", in_all=False,
               snippet="factory.export.preference_consumers:preference_snippet"),
    FormatSpec("ranking", "no preference pairs: refine mistakes with their correction, coa when-to-act pairs",
               "factory.export.preference:ranking_writer", in_all=False,
               snippet="factory.export.preference_consumers:ranking_snippet"),
    FormatSpec("kto", "no desirable or undesirable steps", "factory.export.preference:kto_writer", in_all=False,
               snippet="factory.export.preference_consumers:kto_snippet"),
    FormatSpec("simulator", "no observations to predict", "factory.export.world_model:simulator_writer",
               in_all=False, snippet="factory.export.world_model:simulator_snippet"),
    FormatSpec("atif", "no row converts to native tool calls", "factory.interchange.export:interchange_writer",
               in_all=False),
    FormatSpec("adp", "no row converts to native tool calls", "factory.interchange.export:interchange_writer",
               in_all=False),
)  # fmt: skip

FORMATS: tuple[str, ...] = tuple(spec.name for spec in SPECS)
PAIR_FORMATS = ("preference", "ranking", "kto")  # read by preference trainers (DPO, KTO), not by SFT
ALL_FORMATS: tuple[str, ...] = tuple(spec.name for spec in SPECS if spec.in_all)  # what "all" writes
FormatName = Literal[FORMATS]  # type: ignore[valid-type]  # derived: the names above, nothing to keep in sync


def format_spec(name: str) -> FormatSpec:
    return next(spec for spec in SPECS if spec.name == name)
