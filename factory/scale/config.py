"""The `ray:` section of the run config and the slice of the work one shard runs."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from ..config import StrictModel


class ShardSlice(StrictModel):
    """Shard `index` of `count`: the items whose key hashes to `index` (keys.py)."""

    index: int = Field(ge=0)
    count: int = Field(ge=1)

    @model_validator(mode="after")
    def _index_below_count(self) -> "ShardSlice":
        if self.index >= self.count:
            raise ValueError(f"shard index {self.index} is not below the shard count {self.count}")
        return self


class RayConfig(StrictModel):
    enabled: bool = Field(False, description="run refine/coa/passrate sharded on Ray (--ray)")
    address: str | None = Field(
        None, description="a Ray cluster's address (host:port); None: RAY_ADDRESS if set, else a local Ray instance"
    )
    shards: int | None = Field(
        None, ge=1, description="shards per stage at its first run (None: the cluster's CPU count); a rerun keeps it"
    )
    max_retries: int = Field(3, ge=0, description="times Ray reruns a shard whose worker was lost")
    shard: ShardSlice | None = Field(
        None, description="set by the driver on each worker's config: the slice this run folder holds"
    )


def ray_enabled(config: Any) -> bool:
    """True when `config` (a FactoryConfig, or any object with a `ray` section) asks for Ray."""
    section = getattr(config, "ray", None)
    return bool(section is not None and section.enabled)
