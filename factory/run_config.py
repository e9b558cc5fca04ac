"""The run config: the YAML file (`-c`) every generating command reads, one section per stage.

FactoryConfig gathers the sections; each section's model lives beside its stage
(factory/refine/config.py, factory/coa/config.py, ...). `config_from_args` is the
config a command runs with: the file, then the command's flags on top.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import Field, field_validator

from .cli_options import LLM_FLAGS, config_flag_overrides, flag_names, flag_overrides, run_folder_of, with_overrides
from .coa.config import CoaConfig
from .coa.pairs.config import PairsConfig
from .config import StrictModel, load_yaml_config
from .errors import ConfigError, FactoryError, MissingKeyError
from .llm.config import LLMConfig
from .passrate.config import PassrateConfig
from .pipeline.config import PipelineConfig
from .refine.config import RefineConfig
from .scale.config import RayConfig
from .scale.options import RAY_FLAG_NAMES, ray_overrides
from .smoke.config import SmokeConfig


class FactoryConfig(StrictModel):
    run_dir: Path = Path("outputs/smoke")
    llm: LLMConfig = Field(default_factory=LLMConfig)
    smoke: SmokeConfig = Field(default_factory=SmokeConfig)
    refine: RefineConfig = Field(default_factory=RefineConfig)
    coa: CoaConfig = Field(default_factory=CoaConfig)
    passrate: PassrateConfig = Field(default_factory=PassrateConfig)
    pairs: PairsConfig = Field(default_factory=PairsConfig, description="factory pairs: AutoCoA's when-to-act pairs")
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig, description="factory run's stages")
    ray: RayConfig = Field(default_factory=RayConfig, description="sharding generation over Ray (--ray)")
    prompts_dir: Path | None = Field(
        None,
        description="a folder of prompt files (<name>.md, as under prompts/) that override the shipped ones "
        "by the same relative name; the shipped prompts fill in the rest (relative to the working folder)",
    )

    @field_validator("prompts_dir")
    @classmethod
    def _prompts_dir_exists(cls, folder: Path | None) -> Path | None:
        if folder is not None and not folder.is_dir():
            raise ValueError(f"{folder} is not a folder (a folder of <name>.md prompt overrides)")
        return folder


def load_factory_config(path: str | Path | None) -> FactoryConfig:
    return load_yaml_config(FactoryConfig, path) if path else FactoryConfig()


def config_from_args(args: argparse.Namespace) -> FactoryConfig:
    """The -c file (or the defaults) with the command's flags set on top; a bad value is one line naming the
    flag it came from, and an unknown model name fails here, before a store is opened or a stage runs.
    Which fields a command's own flags set, the command declares beside them (cli_options.sets_config).

    The run folder: RUN_DIR on the command line, else the config's run_dir, else outputs/<command>."""
    config = load_factory_config(args.config)
    overrides = flag_overrides(args, LLM_FLAGS, "llm.")
    flags = flag_names(LLM_FLAGS, "llm.") | {"llm.cache": "--no-cache", "run_dir": "RUN_DIR"} | RAY_FLAG_NAMES
    if args.no_cache:
        overrides["llm.cache"] = False
    run_dir = run_folder_of(args)
    if run_dir:
        overrides["run_dir"] = run_dir
    elif "run_dir" not in config.model_fields_set and getattr(args, "run_dir_default", None):
        overrides["run_dir"] = args.run_dir_default  # the command's own folder, unless the config names one
    overrides.update(ray_overrides(args))
    own, declared = config_flag_overrides(args)
    config = with_overrides(config, overrides | own, flags=flags | declared.names)
    check_models(config, args)
    return declared.finish(config, args) if declared.finish else config


def check_models(config: FactoryConfig, args: argparse.Namespace) -> None:
    """A model name no endpoint takes is one line now, not after a stage has started: the same resolution
    the client makes on its first call (factory/llm/providers.py), less the API key, which is asked for then."""
    from .llm.providers import resolve_endpoint

    policy = config.pipeline.passrate.policy if config.pipeline.passrate else None
    for field, llm in (("llm.model", config.llm), ("pipeline.passrate.policy.model", policy)):
        if llm is None:
            continue
        try:
            resolve_endpoint(llm)
        except MissingKeyError:
            continue  # the name is known; its key is needed only to send (a --dry-run sends nothing)
        except FactoryError as exc:
            from_flag = field == "llm.model" and getattr(args, "model", None) is not None
            source = "--model" if from_flag else f"{args.config or 'config'}: field '{field}'"
            raise ConfigError(f"{source}: {exc}") from None
