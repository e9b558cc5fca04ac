#!/usr/bin/env bash
# The standing GPU check: masked-SFT throughput and MFU beside TRL's SFTTrainer, and the
# masked / trained / removed ablation, in one call that fits a short lease.
#
#   bash benchmarks/gpu_check.sh            # on a CUDA machine; results under $OUT (default benchmarks/results)
#   bash benchmarks/gpu_check.sh --dry-run  # on CPU: the same steps at toy sizes (proves the script, measures nothing)
#
# On the lent device machine (no registry there), carry the wheels the project needs and
# torch lacks (.whl, see /work/.library/device/README.md); they are installed under /tmp/site.
# Results: train_throughput.json and masking_ablation.json, merged into copies of the
# committed files so one commit of $OUT's files keeps earlier keys.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-benchmarks/results}
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
PY=${PYTHON:-python3}

if ! "$PY" -c "import pydantic, duckdb" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_check: installing the carried wheels failed"; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
for name in train_throughput masking_ablation; do
  [ -f "benchmarks/results/$name.json" ] && [ "$OUT_DIR" != benchmarks/results ] && cp "benchmarks/results/$name.json" "$OUT_DIR/"
done

"$PY" - <<'PY'
import torch, transformers
print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "")
PY
TRL=()
"$PY" -c "import trl, datasets" 2>/dev/null || { echo "gpu_check: TRL or datasets missing: train.sft alone"; TRL=(--no-trl); }

if [ "${1:-}" = "--dry-run" ]; then
  "$PY" benchmarks/train_throughput.py --tiny --steps 3 --warmup 1 --seq-lens 256 --variants dense-mask no-cudnn-sdpa \
    --profile "${TRL[@]}" --output "$OUT_DIR/train_throughput.json"
  "$PY" benchmarks/masking_ablation.py --tiny --steps 4 --rows 60 --output "$OUT_DIR/masking_ablation.json"
  exit
fi
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.draw --format=csv || true
# 0.5B: train.sft, the same with the mask built on the CPU (the old path) and with cuDNN's SDPA off, TRL, and
# one profiled train.sft step (its top ops in the results), so a gap to TRL comes back with its cause.
"$PY" benchmarks/train_throughput.py --models qwen2.5-0.5b --seq-lens 4096 8192 --steps 8 --warmup 2 \
  --variants dense-mask no-cudnn-sdpa --profile "${TRL[@]}" --output "$OUT_DIR/train_throughput.json" 2>&1 | grep -v Warning
"$PY" benchmarks/train_throughput.py --models qwen2.5-1.5b --seq-lens 4096 8192 --steps 8 --warmup 2 \
  "${TRL[@]}" --output "$OUT_DIR/train_throughput.json" 2>&1 | grep -v Warning
# One seed per variant: two seeds on 2026-11-27/28 agreed to within 0.01 on every figure but recovery (0.05 vs 0.11).
"$PY" benchmarks/masking_ablation.py --seeds 1 --output "$OUT_DIR/masking_ablation.json" 2>&1 | grep -vE "Warning|^step "
