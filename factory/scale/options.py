"""`--ray [ADDRESS]` and `--shards N`, the flags of refine, coa, passrate and run, as `ray.*` overrides."""

from __future__ import annotations

import argparse
from typing import Any


def add_ray_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="shard the generation over Ray workers (needs the [ray] extra); ADDRESS: a cluster's host:port "
        "(default: RAY_ADDRESS if set, else a local Ray instance). docs/scale.md",
    )
    parser.add_argument(
        "--shards", type=int, help="shards per stage at its first run (default: the cluster's CPU count)"
    )


RAY_FLAG_NAMES = {"ray.enabled": "--ray", "ray.address": "--ray", "ray.shards": "--shards"}


def ray_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The `ray.*` overrides the flags ask for (none when the command has no such flags)."""
    overrides: dict[str, Any] = {}
    address = getattr(args, "ray", None)
    if address is not None:
        overrides["ray.enabled"] = True
        if address:
            overrides["ray.address"] = address
    if getattr(args, "shards", None) is not None:
        overrides["ray.shards"] = args.shards
    return overrides
