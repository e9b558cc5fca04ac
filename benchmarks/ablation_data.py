"""Data for benchmarks/refinement_ablation.py: refine rows, their three training variants, and the base model.

- `replay_export`: the recorded capable-model set (benchmarks/data/refine_replay) run
  through `factory refine` over loopback HTTP and `factory export --format sharegpt`,
  so the ablation has real refine rows with corrected mistakes without a model;
  a user with a real generator passes their own export instead (`--data`).
- `variants`: the same rows three ways, as AgentRefine's ablation: `masked` (ours:
  mistake turns stay in context with loss off), `trained` (every assistant turn
  trains, mistakes too), `removed` (each mistake turn and the observation answering
  it are dropped, so the model sees only the corrected path).
- `hf_base`: a transformers folder from a GGUF (dequantized), or the folder given.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPLAY = Path(__file__).parent / "data" / "refine_replay" / "capable_v1"


def replay_export(work: Path) -> Path:
    """Refine rows from the recorded set: `factory refine` against the replay server, then a sharegpt export."""
    sys.path.insert(0, str(ROOT / "tests"))
    from refine_replay import ReplayServer, load_replay_set, write_personas

    from factory.cli import main as factory_main
    from factory.refine.batch import run_refine
    from factory.run_config import FactoryConfig

    recordings = load_replay_set(REPLAY)
    server = ReplayServer(recordings)
    url, run_dir = server.start_in_thread(), work / "refine"
    work.mkdir(parents=True, exist_ok=True)
    try:
        personas = write_personas(recordings, work / "personas.jsonl")
        refine = {"count": len(recordings), "seed": 0, "budget": 4, "dm_evaluation": "llm", "with_code": False,
                  "injection": True, "personas": str(personas)}  # fmt: skip
        llm = {"model": "replay", "base_url": url, "cache": False}
        run_refine(FactoryConfig.model_validate({"run_dir": str(run_dir), "llm": llm, "refine": refine}), False)
    finally:
        server.stop()
    out = work / "export"
    factory_main(["export", str(run_dir), "--out", str(out), "--format", "sharegpt", "--jsonl", "--validation", "0"])
    return out / "sharegpt"


def read_rows(path: Path) -> list[dict]:
    """Every sharegpt row of a file or of the .jsonl/.parquet files in a folder."""
    files = sorted(path.glob("*.jsonl")) + sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    rows: list[dict] = []
    for file in files:
        if file.suffix == ".parquet":
            import pyarrow.parquet as pq

            rows.extend(pq.read_table(file).to_pylist())
        else:
            rows.extend(json.loads(line) for line in file.read_text().splitlines() if line.strip())
    return [r for r in rows if r.get("conversations")]


def mistake_turns(row: dict) -> int:
    return sum(1 for t in row["conversations"] if t["from"] == "gpt" and not t.get("loss", True))


def variant(row: dict, kind: str) -> dict:
    row = copy.deepcopy(row)
    turns = row["conversations"]
    if kind == "trained":
        for turn in turns:
            if turn["from"] == "gpt":
                turn["loss"] = True
    elif kind == "removed":
        kept, skip_observation = [], False
        for turn in turns:
            if turn["from"] == "gpt" and not turn.get("loss", True):
                skip_observation = True  # the mistake goes, and the observation that answered it
                continue
            if skip_observation and turn["from"] == "human":
                skip_observation = False
                continue
            skip_observation = False
            kept.append(turn)
        row["conversations"] = kept
    return row


def write_variants(rows: list[dict], folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for kind in ("masked", "trained", "removed"):
        paths[kind] = folder / f"{kind}.jsonl"
        paths[kind].write_text("".join(json.dumps(variant(r, kind)) + "\n" for r in rows))
    return paths


def hf_base(spec: str, work: Path) -> Path:
    """A transformers folder: `spec` itself, or a GGUF dequantized and saved (transformers cannot save GGUF weights)."""
    path = Path(spec)
    if path.is_dir():
        return path
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = work / "base"
    if (folder / "config.json").exists():
        return folder
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def scratch(kept: str | None) -> Path:
    return Path(kept) if kept else Path(tempfile.mkdtemp(prefix="refinement-ablation-"))
