"""train/: render trajectories to (input_ids, labels) with loss masks, SFT, eval.

Needs the [train] extra (torch, transformers). Filled by issue 6.
"""
