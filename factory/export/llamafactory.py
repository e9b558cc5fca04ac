"""The `llamafactory` export: sharegpt samples whose LLaMA-Factory labels are factory.mask.render's labels.

LLaMA-Factory (0.9.x) drops the per-turn `loss` key: its supervised processor
trains every gpt turn of a sample, or, with `mask_history: true`, only the
last one. So the per-turn masks are carried by the samples themselves:

* mode `full` (no kept row has a masked gpt turn before a trained one, e.g. a
  coa-only export): one sample per row, cut after its last trained gpt turn,
  trained with `mask_history: false`: every gpt turn in it trains.
* mode `last` (some row keeps a mistake in context, as refine rows do): one
  sample per trained gpt turn, the conversation up to and including it,
  trained with `mask_history: true`: only that turn trains, the mistakes and
  observations before it stay context. The samples of a row together train
  exactly the row's trained turns (tests/test_consumer_llamafactory.py).

A gpt turn trains when its sharegpt `loss` is true (formats.TRAINS, render's
rule). The mode is one per export, since `mask_history` is one switch of the
whole training run. `dataset_info.json` beside the shards names one dataset
per shard (`factory_<split>` or `factory_<split>_<k>`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from ..store import Store
from .formats import METADATA, sharegpt_sql

Mode = Literal["full", "last"]
# sharegpt `loss` already follows render's rule (formats.TRAINS: flagged, not a mistake, not blank).
_TRAINS_AT = """(c[i]."from" = 'gpt' AND c[i].loss)"""
DATASET_INFO = "dataset_info.json"
SHAREGPT_TAGS = {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
                 "system_tag": "system"}  # fmt: skip


def _marked(selection: str) -> str:
    """sharegpt rows with `trained`, the 1-based positions of the gpt turns that train."""
    return f"""
        SELECT *, list_filter(range(1, len(c) + 1), lambda i: {_TRAINS_AT}) AS trained
        FROM (SELECT *, conversations AS c FROM ({sharegpt_sql(selection)}))"""


def _sample(upto: str, loss: str) -> str:
    """The conversation up to position `upto`, each turn's `loss` saying whether it trains in this sample:
    LLaMA-Factory ignores the key, but any reader that honours it (factory.mask.render) then draws its masks."""
    return (
        f'list_transform(c[1:{upto}], lambda x, i: struct_pack("from" := x."from", value := x.value, loss := {loss}))'
    )


def llamafactory_mode(store: Store, selection: str) -> Mode:
    """`last` when some row has a gpt turn that does not train before one that does."""
    masked_before = (
        f"""len(list_filter(range(1, trained[-1]), lambda i: c[i]."from" = 'gpt' AND NOT {_TRAINS_AT})) > 0"""
    )
    sql = f"SELECT coalesce(bool_or({masked_before}), false) FROM ({_marked(selection)}) WHERE len(trained) > 0"
    return "last" if store.query(sql)[0][0] else "full"


def llamafactory_sql(selection: str, mode: Mode) -> str:
    """The samples: `id` (the trajectory), `turn` (0-based index of the sample's last, trained, turn), conversations."""
    if mode == "full":
        return f"""
            SELECT id, trained[-1] - 1 AS turn,
                   {_sample("trained[-1]", "x.loss")} AS conversations, {METADATA}
            FROM ({_marked(selection)}) WHERE len(trained) > 0"""
    return f"""
        SELECT id, position - 1 AS turn, {_sample("position", "i = position")} AS conversations, {METADATA}
        FROM (SELECT *, unnest(trained) AS position FROM ({_marked(selection)}))"""


ALPACA_COLUMNS = {"prompt": "instruction", "query": "input", "response": "output"}  # the afm rows, for AFM's fork


def write_dataset_info(
    folder: Path, files: dict[str, list[Path]], formatting: str = "sharegpt", native: bool = False
) -> dict[str, list[str]]:
    """folder/dataset_info.json with one entry per shard; returns split -> dataset names, for the config.
    `native`: the samples carry function_call / observation turns and a `tools` column (llamafactory_native.py)."""
    columns = (
        {"columns": {"messages": "conversations", **({"tools": "tools"} if native else {})},
         "tags": {**SHAREGPT_TAGS, **({"observation_tag": "observation", "function_tag": "function_call"}
                                      if native else {})}}
        if formatting == "sharegpt"
        else {"columns": ALPACA_COLUMNS}
    )  # fmt: skip
    info, names = {}, {}
    for split, paths in files.items():
        for k, path in enumerate(paths):
            name = f"factory_{split}" if len(paths) == 1 else f"factory_{split}_{k}"
            info[name] = {"file_name": Path(path).name, "formatting": formatting, **columns}
            names.setdefault(split, []).append(name)
    (folder / DATASET_INFO).write_text(json.dumps(info, indent=2) + "\n")
    return names
