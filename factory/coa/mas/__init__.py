"""The multi-agent system of the Chain-of-Agents path (see loop.py for the flow).

async with open_agents(llm_config, coa.models, store, run_id) as agents:
    toolbox = ToolBox.from_config(coa.tools, agents.clients["summarizer"])
    trace = await run_mas(agents, toolbox, task, coa)
"""

from .agents import Agents, RunState, Stop, open_agents, role_configs
from .history import history_text
from .loop import choose_variant, offered_tools, run_mas
from .voice import team_talk

__all__ = [
    "Agents", "RunState", "Stop", "choose_variant", "history_text", "offered_tools", "open_agents", "role_configs",
    "run_mas", "team_talk",
]  # fmt: skip
