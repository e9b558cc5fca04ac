"""verl's agent-loop run path for the environment tests: its own dataset, collate_fn and AgentLoopWorker.

`roll_out` reads the exported refine-world rows with verl 0.9.1's `RLHFDataset` and `collate_fn`, builds
verl's `AgentLoopWorker` from verl's generated trainer config (the policy's config.json and tokenizer in a
folder, as verl loads them; our loop registered from the exported agent_loop.yaml) and runs
`generate_sequences`. Only the LLM server is a stand-in, the network edge (`PolicyServer`), which
honours stop strings as vLLM does.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import sys
import types

TURN = re.compile(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>", re.S)


def stand_in(name: str, **attributes) -> None:
    """An empty module for an import verl makes and this path never runs: verl's HTTP server packages where
    they are absent (uvicorn, fastapi), and the Qwen2-VL helper transformers 5.24 lacks."""
    if name in sys.modules:  # imported already, or stood in by an earlier test module
        return
    if importlib.util.find_spec(name.split(".")[0]) is None or name.endswith("qwen2_vl"):
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        sys.modules[name] = module


def agent_loop_worker():
    """verl's AgentLoopWorker class, with empty stand-ins for the imports this path never runs."""
    stand_in("verl.models.transformers.qwen2_vl", get_rope_index=lambda *args, **kwargs: None)
    stand_in("uvicorn", Server=type("Server", (), {}), Config=type("Config", (), {}))
    stand_in("fastapi", FastAPI=type("FastAPI", (), {}))
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    return AgentLoopWorker


class PolicyServer:
    """verl's LLM server manager, stood in at the network edge: reads the conversation from the prompt tokens
    and answers with the policy's next reply as token ids (the reply, then <|im_end|>). A `stop` string ends
    the reply as vLLM ends it: with the token that completes the string, and no <|im_end|>."""

    def __init__(self, tokenizer, policy):
        self.tokenizer, self.policy, self.prompts, self.sampling = tokenizer, policy, [], []

    async def generate(self, *, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        text = self.tokenizer.decode(prompt_ids)
        self.prompts.append(text)
        self.sampling.append(dict(sampling_params))
        messages = [{"role": role, "content": content} for role, content in TURN.findall(text)]
        tokens = self.tokenizer.encode(await self.policy(messages), add_special_tokens=False)
        stopped = self.stopped_at(tokens, sampling_params.get("stop") or [])
        end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        return TokenOutput(token_ids=tokens + [end] if stopped is None else tokens[:stopped])

    def stopped_at(self, tokens: list[int], stops: list[str]) -> int | None:
        for count in range(1, len(tokens) + 1):
            if any(stop in self.tokenizer.decode(tokens[:count]) for stop in stops):
                return count
        return None


def trainer_config(model_dir, agent_loops, max_turns, response_length=2048):
    import verl
    from omegaconf import OmegaConf

    config = OmegaConf.load(os.path.join(os.path.dirname(verl.__file__), "trainer/config/_generated_ppo_trainer.yaml"))
    rollout = config.actor_rollout_ref.rollout
    config.actor_rollout_ref.model.path = str(model_dir)
    rollout.name, rollout.prompt_length, rollout.response_length = "vllm", 1024, response_length
    rollout.multi_turn.max_assistant_turns = max_turns
    rollout.agent.agent_loop_config_path = str(agent_loops)
    return config


def roll_out(worker_class, root, policy, max_turns, close=None, agent_loops=None):
    """The exported rows through verl: RLHFDataset -> collate_fn -> AgentLoopWorker.generate_sequences."""
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from factory.mask.tiny import tiny_model, tiny_tokenizer

    model_dir = root / "policy"
    model = tiny_model(tiny_tokenizer())  # its config and the tokenizer are all verl reads here: no weights
    model.config.architectures = [type(model).__name__]
    model.config.save_pretrained(model_dir)
    tiny_tokenizer().save_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)  # the policy's tokenizer, as verl loads it
    folder = root / "out" / "verl" / "refine_world"
    data = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 4096, "filter_overlong_prompts": True,
                             "filter_overlong_prompts_workers": 1, "cache_dir": str(root / "cache")})  # fmt: skip
    dataset = RLHFDataset([str(folder / "rl-00000-of-00001.parquet")], tokenizer, data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    server = PolicyServer(tokenizer, policy)
    config = trainer_config(model_dir, agent_loops or folder / "agent_loop.yaml", max_turns)
    worker = worker_class(config, llm_client=server)

    async def generate():
        try:
            return await worker.generate_sequences(batch)
        finally:
            if close is not None:
                await close()  # the policy's HTTP client belongs to this event loop

    return asyncio.run(generate()), server, tokenizer
