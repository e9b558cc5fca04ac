"""Scale-out on Ray (issue 17): one stage's work split into shards, each run by the single-process driver.

    factory passrate RUN_DIR --tasks code.parquet --ray            # a local Ray instance, or RAY_ADDRESS
    factory coa -c run.yaml --ray 10.0.0.1:6379 --shards 16       # a cluster started with `ray start`

The pieces: `config.py` (the `ray:` section and a shard's slice), `keys.py` (which shard an item
belongs to), `plan.py` (RUN_DIR/shards/plan.json, kept across reruns), `shard_task.py` (what a Ray
worker runs), `cluster.py` (the only module that imports ray), `merge.py` (shard stores into the
run's store) and `sharded.py` (the driver). Nothing here imports a stage: a stage hands its own
functions to `run_on_ray`, so the stages import this package and never the reverse.
"""

from .config import RayConfig, ShardSlice, ray_enabled
from .keys import shard_of, shard_subset

__all__ = ["RayConfig", "ShardSlice", "ray_enabled", "shard_of", "shard_subset"]
