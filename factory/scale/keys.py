"""Which shard an item belongs to: sha256 of its key modulo the shard count.

The key is stable (a persona id, a task id), so an item stays in the shard that holds its
cached answers for as long as the plan's count does (plan.py keeps it across reruns).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any, TypeVar

T = TypeVar("T")


def shard_of(key: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % count


def shard_subset(items: Iterable[T], config: Any, key: Callable[[T], str] = attrgetter("id")) -> list[T]:
    """The items of this run's shard (config.ray.shard), or all of them when the run is not a shard.
    The key defaults to the item's `id` (a Task's, a Persona's)."""
    section = getattr(config, "ray", None)
    shard = getattr(section, "shard", None)
    if shard is None:
        return list(items)
    return [item for item in items if shard_of(key(item), shard.count) == shard.index]
