"""train.sft on CPU: a tiny random model learns from exported rows of every format.

Real parts: the tiny BPE tokenizer and random Qwen2/Llama models of factory.mask.tiny,
factory.mask.render's masks, accelerate, peft, files on disk and one real subprocess.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
for extra in ("transformers", "accelerate", "peft"):  # the [train] extra
    pytest.importorskip(extra)

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from peft import PeftModel  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from factory.errors import ConfigError, FactoryError  # noqa: E402
from factory.mask.render import IGNORE, render  # noqa: E402
from factory.mask.tiny import tiny_model, tiny_tokenizer  # noqa: E402
from train import packing  # noqa: E402
from train.checkpoint import CheckpointMismatch  # noqa: E402
from train.config import load_config  # noqa: E402
from train.packing import collate, pack  # noqa: E402
from train.sft import fit, main  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ITEMS, PLACES = ("cup", "apple", "knife", "key", "book"), ("kitchen", "hall", "garden", "tower")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls: one thread beats two fighting over a shared 2-core box
    yield
    torch.set_num_threads(before)


def sharegpt_row(i: int, item: str, place: str) -> dict:
    turns = [
        {"from": "system", "value": "You are an agent in a text world.", "loss": False},
        {"from": "human", "value": f"Put the {item} in the {place}.", "loss": False},
        {"from": "gpt", "value": f"Thought: I need the {item}.\nAction: take {item}", "loss": True},
        {"from": "human", "value": f"Observation: You take the {item}.", "loss": False},
        {"from": "gpt", "value": f"Action: go to {place}\nAction: put {item} in {place}", "loss": True},
    ]
    return {"id": f"s{i}", "conversations": turns, "source": "refine", "script_id": f"sc{i}", "weight": 1.0}


def messages_row(i: int, item: str, place: str) -> dict:
    messages = [
        {"role": "user", "content": f"Put the {item} in the {place}.", "weight": None},
        {"role": "assistant", "content": f"Action: take {item}", "weight": 1},
        {"role": "tool", "content": f"You take the {item}.", "weight": None},
        {"role": "assistant", "content": f"Action: put {item} in {place}", "weight": 1},
    ]
    return {"id": f"m{i}", "messages": messages, "source": "refine", "task_id": None, "script_id": None, "weight": 1.0}


def afm_row(i: int, item: str, place: str) -> dict:
    output = (
        f"<think>Find the {item}.</think>\n<code>print('{item}')</code>\n<observation>{item}</observation>\n"
        f"<answer>The {item} is in the {place}.</answer>"
    )
    start, end = output.index("<observation>"), output.index("</observation>") + len("</observation>")
    return {"id": f"a{i}", "instruction": f"Where is the {item}?", "input": "", "output": output,
            "observation_spans": [[start, end]]}  # fmt: skip


def write_export(folder: Path, count: int = 30, seed: int = 0) -> list[str]:
    """sharegpt + messages rows in JSON lines, AFM rows in parquet: the three export formats."""
    rng = random.Random(seed)
    makers = (sharegpt_row, messages_row, afm_row)
    rows = [makers[i % 3](i, rng.choice(ITEMS), rng.choice(PLACES)) for i in range(count)]
    jsonl = folder / "chat.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows if "instruction" not in r), encoding="utf-8")
    parquet = folder / "afm.parquet"
    pq.write_table(pa.Table.from_pylist([r for r in rows if "instruction" in r]), parquet)
    return [str(jsonl), str(parquet)]


def write_config(folder: Path, files: list[str], **extra) -> Path:
    data = {"train": files, "validation_fraction": 0.2, "max_seq_length": 192}
    config = {"model": {"path": "tiny:qwen2"}, "data": data,
              "optim": {"learning_rate": 3e-3, "warmup_steps": 2, "batch_size": 2, "grad_accum": 2, "max_steps": 24},
              "output_dir": str(folder / "out"), "log_steps": 4, **extra}  # fmt: skip
    path = folder / "sft.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sft")
    config = load_config(write_config(folder, write_export(folder), save_steps=12, eval_steps=12))
    metrics, model = fit(config)
    return folder, config, metrics, model


def test_pack_fills_bins_without_overflow_and_keeps_every_item():
    lengths = [90, 10, 60, 40, 35, 5, 100, 20, 64]
    bins = pack(lengths, 100)
    assert sorted(i for b in bins for i in b) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in b) <= 100 for b in bins)
    assert len(bins) == 5  # total 424 tokens: at least 5 bins of 100
    with pytest.raises(ValueError, match="more than the sequence length"):
        pack([101], 100)


def test_targets_never_cross_a_trajectory_boundary(tokenizer, monkeypatch):
    a = (torch.tensor([5, 6, 7]), torch.tensor([IGNORE, 6, 7]), 1.0)
    b = (torch.tensor([8, 9]), torch.tensor([8, 9]), 2.0)
    batch = collate([[a, b], [b]], tokenizer.pad_token_id, "sdpa")
    assert batch.targets.tolist() == [[6, 7, IGNORE, 9, IGNORE], [9, IGNORE, IGNORE, IGNORE, IGNORE]]
    assert batch.position_ids.tolist() == [[0, 1, 2, 0, 1], [0, 1, 0, 1, 2]]
    assert batch.token_weights.tolist() == [[1, 1, 0, 2, 0], [2, 0, 0, 0, 0]]
    assert batch.attention_mask is None  # transformers builds the mask on the device from position_ids
    monkeypatch.setattr(packing, "MASK_FROM_POSITIONS", False)  # a transformers too old for that
    mask = collate([[a, b], [b]], tokenizer.pad_token_id, "sdpa").attention_mask[0, 0]
    assert not mask[3, :3].any() and mask[4, 3:5].all() and not mask[1, 2]  # block-diagonal and causal
    flash = collate([[a, b], [b]], tokenizer.pad_token_id, "flash_attention_2")  # one padding-free row
    assert flash.input_ids.tolist() == [[5, 6, 7, 8, 9, 8, 9]] and flash.attention_mask is None
    assert flash.position_ids.tolist() == [[0, 1, 2, 0, 1, 0, 1]] and flash.real_tokens == 7
    assert flash.varlen["cu_seq_lens_q"].tolist() == [0, 3, 5, 7] and flash.varlen["max_length_k"] == 3
    assert flash.targets.tolist() == [[6, 7, IGNORE, 9, IGNORE, 9, IGNORE]]


@pytest.mark.parametrize("dense_mask", [False, True], ids=["mask_from_positions", "dense_mask"])
@pytest.mark.parametrize("arch, attn", [("qwen2", "sdpa"), ("llama", "eager")])
def test_packed_batch_gives_the_same_token_losses_as_one_by_one(tokenizer, arch, attn, dense_mask, monkeypatch):
    monkeypatch.setattr(packing, "MASK_FROM_POSITIONS", not dense_mask)
    rows = [messages_row(i, ITEMS[i], PLACES[i % 4]) for i in range(4)] + [sharegpt_row(9, "key", "hall")]
    segments = []
    for row in rows:
        rendered = render(row, tokenizer)
        segments.append((torch.tensor(rendered.input_ids), torch.tensor(rendered.labels), 1.0))
    model = tiny_model(tokenizer, arch, seed=1)
    model.set_attn_implementation(attn)

    def losses(batch, **inputs):
        logits = model(**(inputs or batch.model_inputs())).logits
        ce = F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE, reduction="none")
        return ce[batch.targets.flatten() != IGNORE]

    with torch.no_grad():
        alone = torch.cat([losses(collate([[s]], tokenizer.pad_token_id, attn)) for s in segments])
        packed = collate([segments[:3], segments[3:]], tokenizer.pad_token_id, attn)  # two rows, one padded
        assert torch.allclose(losses(packed), alone, atol=1e-5)
        # No mask, segments found from position_ids: the padded rows and the flash layout agree too ...
        by_positions = losses(packed, input_ids=packed.input_ids, position_ids=packed.position_ids, use_cache=False)
        assert torch.allclose(by_positions, alone, atol=1e-5)
        flat = collate([segments[:3], segments[3:]], tokenizer.pad_token_id, "flash_attention_2")
        flat_losses = losses(flat, input_ids=flat.input_ids, position_ids=flat.position_ids, use_cache=False)
        assert flat.input_ids.shape[0] == 1 and torch.allclose(flat_losses, alone, atol=1e-5)
        # ... and plain causal attention over the packed row does not: the check can fail.
        leaky = losses(packed, input_ids=packed.input_ids, use_cache=False)
        assert not torch.allclose(leaky, alone, atol=1e-3)


def test_tiny_model_learns_from_every_export_format(trained):
    folder, config, metrics, _ = trained
    losses = [h["loss"] for h in metrics["history"]]
    assert metrics["steps"] == 24 and len(losses) == 6
    assert losses[-1] < 0.75 * losses[0], losses
    assert metrics["eval_loss"] is not None and metrics["eval_loss"] < losses[0]
    assert metrics["train_rows"] + metrics["validation_rows"] == 30 and metrics["validation_rows"] == 6
    assert json.loads((folder / "out" / "metrics.json").read_text())["steps"] == 24


def test_checkpoint_reloads_with_the_same_logits_and_records_hashes(trained, tokenizer):
    folder, config, metrics, model = trained
    checkpoint = Path(metrics["checkpoint"])
    assert checkpoint.name == "checkpoint-24" and (folder / "out" / "checkpoint-12").is_dir()
    meta = json.loads((checkpoint / "factory_checkpoint.json").read_text())
    assert meta["step"] == 24 and meta["config_hash"] == metrics["config_hash"] and len(meta["data_hash"]) == 16
    reloaded = AutoModelForCausalLM.from_pretrained(checkpoint)
    ids = torch.tensor([render(messages_row(0, "cup", "hall"), tokenizer).input_ids])
    model.eval()
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, reloaded(ids).logits, atol=1e-5)
        assert not torch.allclose(tiny_model(tokenizer)(ids).logits, reloaded(ids).logits, atol=1e-3)


def test_resume_continues_from_the_saved_step_and_optimizer_state(trained, capsys):
    folder, config, metrics, _ = trained
    resumed_dir = folder / "resumed"
    shutil.copytree(folder / "out" / "checkpoint-12", resumed_dir / "checkpoint-12")  # as if killed after step 12
    again, model = fit(config.model_copy(update={"output_dir": str(resumed_dir)}))
    assert "resumed from" in capsys.readouterr().out and again["steps"] == 24
    assert [h["step"] for h in again["history"]] == [16, 20, 24]  # steps 1-12 were not run again
    # Same weights as the run that never stopped: step, Adam moments, schedule and data order all came back.
    final = AutoModelForCausalLM.from_pretrained(metrics["checkpoint"]).state_dict()
    for name, tensor in model.state_dict().items():
        assert torch.allclose(tensor, final[name], atol=1e-5), name


def test_resume_refuses_another_config_or_other_data_unless_forced(trained, tmp_path):
    folder, config, metrics, _ = trained
    shutil.copytree(folder / "out" / "checkpoint-12", tmp_path / "checkpoint-12")
    other_lr = config.model_copy(update={"output_dir": str(tmp_path)}, deep=True)
    other_lr.optim.learning_rate = 1e-4
    with pytest.raises(CheckpointMismatch, match=r"checkpoint-12: cannot resume, config_hash .* -> "):
        fit(other_lr)
    data = tmp_path / "more.jsonl"
    data.write_text(Path(config.data.train[0]).read_text() + json.dumps(messages_row(99, "key", "hall")) + "\n")
    other_data = config.model_copy(update={"output_dir": str(tmp_path)}, deep=True)
    other_data.data.train = [str(data), config.data.train[1]]
    with pytest.raises(CheckpointMismatch, match="data_hash"):
        fit(other_data)
    other_data.force_resume, other_data.optim.max_steps = True, 13
    assert fit(other_data)[0]["steps"] == 13


def test_row_weight_two_trains_like_the_row_twice(tmp_path):
    rows = [messages_row(i, ITEMS[i], PLACES[i]) for i in range(4)]
    weighted, doubled = tmp_path / "weighted.jsonl", tmp_path / "doubled.jsonl"
    weighted.write_text("".join(json.dumps({**r, "weight": 2.0 if i == 0 else 1.0}) + "\n" for i, r in enumerate(rows)))
    doubled.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {**rows[0], "id": "copy"}]))
    results = []
    for data in (weighted, doubled):
        config = load_config(write_config(tmp_path, [str(data)]), [
            "--data.validation_fraction", "0", "--optim.batch_size", "8", "--optim.grad_accum", "1",
            "--optim.max_steps", "1", "--output_dir", str(tmp_path / data.stem)])  # fmt: skip
        metrics, model = fit(config)
        results.append((metrics["history"][0]["loss"], model.state_dict()))
    (loss_a, weights_a), (loss_b, weights_b) = results
    assert loss_a == pytest.approx(loss_b, rel=1e-5)
    assert all(torch.allclose(weights_a[name], weights_b[name], atol=1e-6) for name in weights_a)


def test_lora_trains_only_the_adapter_and_saves_it(tmp_path, tokenizer):
    write_export(tmp_path, count=12)
    shards = [str(tmp_path / "*.jsonl"), str(tmp_path / "*.parquet")]  # globs, as for an export's shard files
    path = write_config(tmp_path, shards, lora={"enabled": True, "r": 4}, gradient_checkpointing=True)
    config = load_config(path, ["--optim.max_steps", "6", "--optim.learning_rate", "0.01", "--model.path=tiny:llama"])
    metrics, model = fit(config)
    checkpoint = Path(metrics["checkpoint"])
    assert (checkpoint / "adapter_model.safetensors").is_file() and not (checkpoint / "model.safetensors").exists()
    base = tiny_model(tokenizer, "llama", seed=config.seed)  # the tiny base is rebuilt from its seed
    untouched = {n: p.clone() for n, p in base.state_dict().items()}
    reloaded = PeftModel.from_pretrained(base, checkpoint)
    ids = torch.tensor([render(sharegpt_row(0, "key", "tower"), tokenizer).input_ids])
    model.eval()
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, reloaded(ids).logits, atol=1e-5)
        with reloaded.disable_adapter():
            assert not torch.allclose(reloaded(ids).logits, model(ids).logits, atol=1e-4)  # the adapter learned
    frozen = {n.replace("base_model.model.", "").replace(".base_layer", ""): p for n, p in model.named_parameters()}
    changed = [n for n, p in frozen.items() if "lora_" not in n and not torch.equal(p.detach(), untouched[n])]
    assert changed == []
    assert any("lora_" in n and p.requires_grad for n, p in model.named_parameters())


def test_config_errors_name_the_file_or_flag_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {path: tiny:qwen2}\ndata: {train: x.jsonl, packingg: true}\noutput_dir: o\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: field 'data.packingg': unknown field"):
        load_config(bad)
    good = write_config(tmp_path, ["x.jsonl"])
    with pytest.raises(ConfigError, match=r"^--optim.batch_size: field 'optim.batch_size': .*greater than 0"):
        load_config(good, ["--optim.batch_size", "0"])
    with pytest.raises(ConfigError, match="missing a value"):
        load_config(good, ["--seed"])
    with pytest.raises(ConfigError, match=r"bad.yaml: not valid YAML at line 2"):
        bad.write_text("model: [\n")
        load_config(bad)


def test_bad_data_stops_with_the_file_and_line(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(messages_row(0, "cup", "hall")) + "\n" + json.dumps({"id": "x", "text": "hi"}) + "\n")
    with pytest.raises(FactoryError, match=r"rows.jsonl:2: .*unknown format"):
        fit(load_config(write_config(tmp_path, [str(rows)])))
    with pytest.raises(FactoryError, match=r"missing.jsonl: no such file"):
        fit(load_config(write_config(tmp_path, [str(tmp_path / "missing.jsonl")])))
    with pytest.raises(FactoryError, match=r"^data.train: '.*train-\*.parquet' matches no file$"):
        fit(load_config(write_config(tmp_path, [str(tmp_path / "train-*.parquet")])))


def test_command_line_runs_the_example_config_and_prints_errors_as_one_line(tmp_path, capsys):
    files = write_export(tmp_path, count=9)
    command = [sys.executable, "-m", "train.sft", "--config", str(REPO / "examples" / "train_tiny.yaml"),
               f"--data.train=[{files[0]}, {files[1]}]", "--data.validation=[]", "--output_dir", str(tmp_path / "run"),
               "--optim.max_steps", "2", "--save_steps", "0", "--log_steps", "1"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "step 2/2" in done.stdout and (tmp_path / "run" / "checkpoint-2" / "model.safetensors").is_file()
    assert main(["--config", str(REPO / "examples" / "train_tiny.yaml"), "--lora.rank", "8"]) == 2
    assert capsys.readouterr().err == "error: --lora.rank: field 'lora.rank': unknown field (check the spelling)\n"


def test_rows_longer_than_the_length_limit_name_the_flag_that_sets_it(tmp_path):
    files = write_export(tmp_path, count=6)
    config = load_config(write_config(tmp_path, files), ["--data.max_seq_length", "12"])
    with pytest.raises(
        FactoryError,
        match=r"does not fit max_length=12.*raise data\.max_seq_length \(now 12, "
        r"flag --data\.max_seq_length\)",
    ):
        fit(config)
