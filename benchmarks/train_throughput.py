"""Training throughput of train.sft beside TRL's SFTTrainer, on the same packed trajectories.

    python benchmarks/train_throughput.py                # CUDA: Qwen2.5-0.5B and -1.5B shapes at 4k and 8k tokens
    python benchmarks/train_throughput.py --tiny         # CPU (automatic without CUDA): a tiny model at 512 / 1024
    python benchmarks/train_throughput.py --models qwen2.5-0.5b --seq-lens 8192 --steps 30

Both trainers get the same rendered rows (synthetic AgentRefine-style
trajectories of varying length, rendered by factory.mask.render with the tiny
tokenizer: the token ids do not change the arithmetic), packed to the
sequence length (train.packing / TRL's "bfd" padding-free packing), one
sequence per step, full fine-tuning, random-init models of the named shapes
(Qwen2Config; nothing is downloaded). Like for like: the same attention
kernel, bf16 autocast where supported, torch AdamW (TRL's default is the fused
one, set to adamw_torch here), clip 1.0, and activation checkpointing only with
--gradient-checkpointing (TRL turns it on by default; here it is off for both).
The first --warmup steps are not timed. Each trainer's clock starts once its
step's batch is built (TRL's Trainer fetches the batch before on_step_begin),
so both time the same work: forward, backward, clipping, optimizer step.
--variants runs train.sft again with one thing changed (the old CPU-built
dense mask; SDPA's cuDNN backend off) and --profile adds each train.sft run's
top ops for one more step: a gap to TRL comes back with where it goes.

- tokens/s: non-padding tokens per second of optimizer steps.
- MFU: 6 * N * tokens/s / peak, N = all parameters (the tied embedding counted
  once, as the output projection that does cost FLOPs). Attention's T^2 FLOPs
  are left out, so MFU reads low at long sequences. Peak = dense bf16 tensor
  FLOPs of the GPU (PEAK_TFLOPS below); on CPU there is no MFU.

Results are merged into benchmarks/results/train_throughput.json under a key
naming the device and mode.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results" / "train_throughput.json"

# Dense (no sparsity) bf16 tensor-core peaks from the vendor data sheets, TFLOP/s.
PEAK_TFLOPS = {"H100 SXM": 989.4, "H100 NVL": 835.0, "H100 PCIe": 756.0, "H200": 989.4, "A100": 312.0,
               "L40S": 362.1, "L4": 121.0, "A10G": 70.0}  # fmt: skip

SHAPES = {  # Qwen2.5 configs (hidden, intermediate, layers, heads, kv heads); vocab 151,936, tied embeddings
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936),
    "qwen2.5-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                         num_key_value_heads=2, vocab_size=151936),
    "tiny": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=1536),
}  # fmt: skip


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny model, short sequences (default without CUDA)")
    parser.add_argument("--models", nargs="+", choices=sorted(SHAPES))
    parser.add_argument("--seq-lens", nargs="+", type=int)
    parser.add_argument("--steps", type=int, help="timed steps per trainer (default 20 on GPU, 30 tiny)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--no-trl", action="store_true", help="only train.sft")
    parser.add_argument("--gradient-checkpointing", action="store_true", help="in both trainers (for 1.5B at 8k)")
    parser.add_argument("--variants", nargs="*", default=[], choices=sorted(VARIANTS),
                        help="train.sft again with one thing changed (dense-mask: the [B,1,L,L] mask built on the "
                        "CPU, as before; no-cudnn-sdpa: SDPA's cuDNN backend off)")  # fmt: skip
    parser.add_argument("--profile", action="store_true", help="profile one more train.sft step; print its top ops")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.tiny = args.tiny or not torch.cuda.is_available()
    args.models = args.models or (["tiny"] if args.tiny else ["qwen2.5-0.5b", "qwen2.5-1.5b"])
    args.seq_lens = args.seq_lens or ([512, 1024] if args.tiny else [4096, 8192])
    args.steps = args.steps or (30 if args.tiny else 20)
    return args


def device_label() -> tuple[str, float | None]:
    """(device name, dense bf16 peak TFLOP/s or None)."""
    if not torch.cuda.is_available():
        return f"CPU {platform.machine()} x{torch.get_num_threads()} threads", None
    name = torch.cuda.get_device_name()
    if "H100" in name:
        key = "H100 NVL" if "NVL" in name else "H100 PCIe" if "PCIe" in name else "H100 SXM"
    else:
        key = next((k for k in PEAK_TFLOPS if k in name), None)
    return name, PEAK_TFLOPS.get(key) if key else None


def synthetic_rows(count: int, seed: int) -> list[dict]:
    """AgentRefine-style sharegpt rows, 2 to 40 exchanges each: lengths from ~100 to several thousand tokens."""
    rng = random.Random(seed)
    items, places = ["cup", "apple", "key", "book", "knife", "map"], ["kitchen", "hall", "garden", "tower", "cellar"]
    rows = []
    for i in range(count):
        turns = [{"from": "human", "value": f"Task {i}: put the {rng.choice(items)} in the {rng.choice(places)}."}]
        for _ in range(rng.choice([2, 3, 5, 8, 13, 21, 40])):
            item, place = rng.choice(items), rng.choice(places)
            turns.append({"from": "gpt", "value": f"Thought: the {item} may be in the {place}.\nAction: go to {place}",
                          "loss": True})  # fmt: skip
            turns.append({"from": "human", "value": f"Observation: You are in the {place}. You see a {item}."})
        rows.append({"id": f"r{i}", "conversations": turns, "weight": 1.0})
    return rows


def build_model(shape: str, attn: str, checkpointing: bool):
    from transformers import AutoModelForCausalLM, Qwen2Config

    from train.modeling import enable_checkpointing

    config = Qwen2Config(**SHAPES[shape], tie_word_embeddings=True, max_position_embeddings=32768, use_cache=False)
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # a 1.5B init on the CPU takes ~15 s
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation=attn)
    if checkpointing:
        enable_checkpointing(model)
    return model, sum(p.numel() for p in model.parameters())


def sft_config(data_file: Path, seq_len: int, total_steps: int, out: str):
    from train.config import SFTConfig

    return SFTConfig.model_validate(
        {
            "model": {"path": "tiny:qwen2"},  # not loaded: the benchmark builds the shaped model itself
            "data": {"train": [str(data_file)], "validation_fraction": 0.0, "max_seq_length": seq_len},
            "optim": {"learning_rate": 1e-5, "schedule": "constant", "batch_size": 1, "max_steps": total_steps},
            "output_dir": out,
        }
    )


def time_factory(shape, data_file, seq_len, args, tokenizer, attn, bf16, out) -> dict:
    from accelerate import Accelerator

    from train.data import load_training_data
    from train.sft import Loop, make_optimizer, make_scheduler

    config = sft_config(data_file, seq_len, args.warmup + args.steps, out)
    accelerator = Accelerator(mixed_precision="bf16" if bf16 else "no", cpu=not torch.cuda.is_available())
    data = load_training_data(config.data, tokenizer, config.seed)
    model, params = build_model(shape, attn, args.gradient_checkpointing)
    optimizer = make_optimizer(model, config)
    loop = Loop(config, data, accelerator, tokenizer.pad_token_id, attn)
    scheduler = make_scheduler(optimizer, config, loop.total_steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    model.train()
    tokens, seconds, profile = 0, 0.0, None
    for step in range(loop.total_steps):
        window = loop.window(step)  # built before the clock starts, as TRL's batches are (get_batch_samples)
        synchronize()
        started = time.perf_counter()
        _, step_tokens = loop.optimizer_step(model, optimizer, scheduler, step, window)
        synchronize()
        if step >= args.warmup:
            tokens, seconds = tokens + step_tokens, seconds + time.perf_counter() - started
    if args.profile:
        profile = profile_step(lambda: loop.optimizer_step(model, optimizer, scheduler, 0, loop.window(0)))
    accelerator.free_memory()
    measured = {"params": params, "tokens": tokens, "seconds": round(seconds, 3), "peak_mem_gb": peak_memory()}
    return measured | ({"profile_top_ops": profile} if profile else {})


def profile_step(run_step) -> list[str]:
    """One more step under torch.profiler: the ops that took the most self time (device time on CUDA)."""
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        run_step()
        synchronize()
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=14, max_name_column_width=60)
    print(table)
    return table.splitlines()


def time_trl(shape, data_file, seq_len, args, tokenizer, attn, bf16, out) -> dict:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    from train.data import load_training_data

    rendered = load_training_data(sft_config(data_file, seq_len, 1, out).data, tokenizer, 0).train
    dataset = Dataset.from_list([{"input_ids": e.input_ids.tolist(), "labels": e.labels.tolist()} for e in rendered])
    clock = StepClock(args.warmup)
    trl_args = TRLConfig(
        output_dir=out, max_length=seq_len, packing=True, packing_strategy="bfd", per_device_train_batch_size=1,
        gradient_accumulation_steps=1, max_steps=args.warmup + args.steps, learning_rate=1e-5,
        lr_scheduler_type="constant", bf16=bf16, save_strategy="no", report_to="none", logging_steps=10_000,
        include_num_input_tokens_seen="all", use_cpu=not torch.cuda.is_available(), disable_tqdm=True, seed=0,
        gradient_checkpointing=args.gradient_checkpointing, optim="adamw_torch",  # TRL's defaults: on, fused
    )  # fmt: skip
    model, params = build_model(shape, attn, False)  # TRL turns checkpointing on itself when asked
    trainer = SFTTrainer(model=model, args=trl_args, train_dataset=dataset, processing_class=tokenizer,
                         callbacks=[clock.callback(TrainerCallback)])  # fmt: skip
    trainer.train()
    return {"params": params, "tokens": clock.tokens, "seconds": round(clock.seconds, 3), "peak_mem_gb": peak_memory()}


def time_dense_mask(*args) -> dict:
    """train.sft with the block-diagonal mask built on the CPU and passed in (the path before position_ids)."""
    import train.packing

    before, train.packing.MASK_FROM_POSITIONS = train.packing.MASK_FROM_POSITIONS, False
    try:
        return time_factory(*args)
    finally:
        train.packing.MASK_FROM_POSITIONS = before


def time_without_cudnn_sdpa(*args) -> dict:
    """train.sft with SDPA's cuDNN backend off (flash / memory-efficient / math remain)."""
    enabled = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        return time_factory(*args)
    finally:
        torch.backends.cuda.enable_cudnn_sdp(enabled)


VARIANTS = {"dense-mask": time_dense_mask, "no-cudnn-sdpa": time_without_cudnn_sdpa}


class StepClock:
    """Times TRL's optimizer steps after the warmup and counts the tokens they saw."""

    def __init__(self, warmup: int):
        self.warmup, self.tokens, self.seconds, self.started, self.seen = warmup, 0, 0.0, 0.0, 0

    def callback(self, base):
        clock = self

        class Clock(base):
            def on_step_begin(self, args, state, control, **kwargs):
                synchronize()
                clock.started, clock.seen = time.perf_counter(), state.num_input_tokens_seen

            def on_step_end(self, args, state, control, **kwargs):
                synchronize()
                if state.global_step > clock.warmup:
                    clock.seconds += time.perf_counter() - clock.started
                    clock.tokens += state.num_input_tokens_seen - clock.seen

        return Clock()


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def peak_memory() -> float | None:
    if not torch.cuda.is_available():
        return None
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return round(peak, 2)


def summarise(measured: dict, peak_tflops: float | None) -> dict:
    rate = measured["tokens"] / measured["seconds"] if measured["seconds"] else None
    mfu = 6 * measured["params"] * rate / (peak_tflops * 1e12) if rate and peak_tflops else None
    return {**measured, "tokens_per_s": round(rate, 1) if rate else None, "mfu": round(mfu, 4) if mfu else None}


def main() -> None:
    from factory.mask.tiny import tiny_tokenizer
    from train.modeling import resolve_attention

    args = parse_args()
    device, peak = device_label()
    bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    attn = resolve_attention("auto")
    mode = "CPU tiny (not a GPU measurement)" if args.tiny else "GPU"
    print(f"device: {device}; mode: {mode}; attention {attn}; bf16 {bf16}; peak {peak} TFLOP/s")
    runs = measure_all(args, tiny_tokenizer(), attn, bf16, peak)
    record = {"mode": mode, "device": device, "peak_bf16_tflops": peak, "attention": attn, "bf16": bf16,
              "steps": args.steps, "warmup": args.warmup, "gradient_checkpointing": args.gradient_checkpointing,
              "runs": runs, "date": date.today().isoformat()}  # fmt: skip
    key = f"{device} | {mode} | {' '.join(args.models)} at {' '.join(map(str, args.seq_lens))}"
    existing = json.loads(args.output.read_text()) if args.output.exists() else {}
    existing[key] = record
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(existing, indent=2) + "\n", encoding="utf-8")
    print(f"written: {args.output} [{key}]")


def measure_all(args, tokenizer, attn: str, bf16: bool, peak: float | None) -> dict:
    """Every model shape x sequence length x trainer, on one synthetic data file."""
    trainers = {"train.sft": time_factory, **{f"train.sft [{v}]": VARIANTS[v] for v in args.variants},
                **({} if args.no_trl else {"trl.SFTTrainer": time_trl})}  # fmt: skip
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        data_file = Path(scratch, "rows.jsonl")
        count = max(64, (args.warmup + args.steps) * max(args.seq_lens) // 300)  # enough rows to fill every step
        data_file.write_text("".join(json.dumps(r) + "\n" for r in synthetic_rows(count, seed=0)), encoding="utf-8")
        for shape in args.models:
            for seq_len in args.seq_lens:
                for name, run in trainers.items():
                    measured = measured_or_oom(run, shape, data_file, seq_len, args, tokenizer, attn, bf16, scratch)
                    measured = summarise(measured, peak) if "error" not in measured else measured
                    results[f"{shape} seq={seq_len} {name}"] = measured
                    print(f"{shape:14} {seq_len:6} {name:16} {measured.get('tokens_per_s')} tok/s  "
                          f"MFU {measured.get('mfu')} {measured.get('error', '')}")  # fmt: skip
    return results


def measured_or_oom(run, *args) -> dict:
    """One trainer's figures, or the out-of-memory it met (1.5B at 8k may not fit an 80 GB card): the other
    runs still go, and the results file is still written."""
    try:
        return run(*args)
    except torch.cuda.OutOfMemoryError as exc:
        error = f"out of memory: {str(exc).splitlines()[0][:200]}"
    gc.collect()  # out of the except block: its traceback held the model's frames
    torch.cuda.empty_cache()
    return {"error": error, "peak_mem_gb": peak_memory()}


if __name__ == "__main__":
    main()
