"""Packing: several rendered trajectories per sequence, with nothing crossing between them.

- Bins: best-fit decreasing (a greedy first-fit-decreasing variant: longest first,
  each into the fullest bin it still fits) up to max_seq_length.
- Targets are shifted here, per segment: the target at position t is the label
  at t+1 of the *same* trajectory, and a trajectory's last position has no
  target. So no token is ever asked to predict the next trajectory's first token,
  and the first token of a trajectory is never a target (as when run alone).
- position_ids restart at 0 for every trajectory (rotary positions as if alone).
- Attention stays inside each trajectory. flash_attention_2: the micro-batch is
  flattened into one padding-free row and the varlen kernel gets the segment
  boundaries (cu_seq_lens; transformers finds segments from position_ids only
  when the batch has one row). sdpa / eager: no mask is passed; transformers
  (>= 4.53) builds the block-diagonal causal mask on the GPU from position_ids,
  since each segment's positions start at 0 (as TRL's padding-free batches do).
  A dense [B, 1, L, L] mask built here cost 40 ms per 4k-token step and 160 ms
  per 8k step on the CPU before the GPU could start (benchmarks/train_throughput.py);
  it is kept for a transformers too old to find segments. Padding (to the longest
  row of a micro-batch) is one more segment with no targets.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Sequence

import torch

from factory.mask.render import IGNORE

try:  # transformers finds packed segments from position_ids (4.53 on); older ones need the dense mask
    from transformers.masking_utils import find_packed_sequence_indices  # noqa: F401

    MASK_FROM_POSITIONS = True
except ImportError:
    MASK_FROM_POSITIONS = False

Segment = tuple[torch.Tensor, torch.Tensor, float]  # (input_ids, labels as factory.mask.render made them, row weight)


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L]
    position_ids: torch.Tensor  # [B, L], restarting at 0 per trajectory
    targets: torch.Tensor  # [B, L], already shifted: the token position t should predict, IGNORE = none
    token_weights: torch.Tensor  # [B, L] float, the row weight where a target exists, else 0
    attention_mask: torch.Tensor | None = None  # [B, 1, L, L] block-diagonal causal (an old transformers only)
    varlen: dict = field(default_factory=dict)  # flash: cu_seq_lens_q/k, max_length_q/k of the flattened row
    real_tokens: int = 0  # tokens that are not padding

    def to(self, device: torch.device | str) -> Batch:
        move = lambda value: value.to(device) if isinstance(value, torch.Tensor) else value  # noqa: E731
        tensors = (self.input_ids, self.position_ids, self.targets, self.token_weights, self.attention_mask)
        varlen = {key: move(value) for key, value in self.varlen.items()}
        return Batch(*(move(t) for t in tensors), varlen=varlen, real_tokens=self.real_tokens)

    def model_inputs(self) -> dict:
        # use_cache=False: with a cache, transformers skips finding the segments from position_ids.
        inputs = {"input_ids": self.input_ids, "position_ids": self.position_ids, "use_cache": False, **self.varlen}
        if self.attention_mask is not None:
            inputs["attention_mask"] = self.attention_mask
        return inputs


def pack(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """Indices grouped into bins whose lengths sum to at most `capacity` (best-fit decreasing, by bisection)."""
    bins: list[list[int]] = []
    free: list[tuple[int, int]] = []  # (space left, bin index), sorted: the first with enough space fits best
    for index in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        size = lengths[index]
        if size > capacity:
            raise ValueError(f"item {index} has {size} tokens, more than the sequence length {capacity}")
        slot = bisect_left(free, (size, -1))
        if slot == len(free):
            bins.append([index])
            insort(free, (capacity - size, len(bins) - 1))
            continue
        space, chosen = free.pop(slot)
        bins[chosen].append(index)
        insort(free, (space - size, chosen))
    return bins


def shifted_targets(labels: torch.Tensor) -> torch.Tensor:
    """Position t predicts label t+1 of the same segment; the last position predicts nothing."""
    return torch.cat([labels[1:], labels.new_full((1,), IGNORE)])


def collate(rows: list[list[Segment]], pad_id: int, attn: str) -> Batch:
    """Rows of segments -> one Batch for the attention implementation `attn`."""
    flash = attn.startswith("flash")
    if flash:
        rows = [[segment for row in rows for segment in row]]  # one padding-free row
    width = max(sum(len(ids) for ids, _, _ in row) for row in rows)
    ids, positions, targets, weights, segments = [], [], [], [], []
    for row in rows:
        parts = [(i, shifted_targets(labels), w) for i, labels, w in row]
        pad = width - sum(len(i) for i, _, _ in parts)
        if pad:
            parts.append((torch.full((pad,), pad_id, dtype=torch.long), torch.full((pad,), IGNORE), 0.0))
        ids.append(torch.cat([i for i, _, _ in parts]))
        positions.append(torch.cat([torch.arange(len(i)) for i, _, _ in parts]))
        targets.append(torch.cat([t for _, t, _ in parts]))
        weights.append(torch.cat([(t != IGNORE).float() * w for _, t, w in parts]))
        segments.append(torch.cat([torch.full((len(i),), n) for n, (i, _, _) in enumerate(parts)]))
    batch = Batch(torch.stack(ids), torch.stack(positions), torch.stack(targets), torch.stack(weights))
    batch.real_tokens = sum(len(i) for row in rows for i, _, _ in row)
    if flash:
        batch.varlen = varlen_kwargs([len(i) for i, _, _ in rows[0]])
    elif not MASK_FROM_POSITIONS:
        batch.attention_mask = block_causal_mask(torch.stack(segments), additive=attn == "eager")
    return batch


def varlen_kwargs(lengths: list[int]) -> dict:
    """Segment boundaries for flash-attention's varlen kernel (given, so no layer re-derives them with a sync)."""
    bounds = torch.tensor([0, *accumulate(lengths)], dtype=torch.int32)
    longest = max(lengths)
    return {"cu_seq_lens_q": bounds, "cu_seq_lens_k": bounds, "max_length_q": longest, "max_length_k": longest}


def block_causal_mask(segment_ids: torch.Tensor, additive: bool) -> torch.Tensor:
    """[B, 1, L, L]: a query attends to earlier-or-same keys of its own segment only."""
    length = segment_ids.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    allowed = (segment_ids[:, :, None] == segment_ids[:, None, :]) & causal
    allowed = allowed[:, None]
    if not additive:
        return allowed
    return torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)
