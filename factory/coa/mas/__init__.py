"""The multi-agent system of the Chain-of-Agents path (see loop.py for the flow).

    async with open_agents(llm_config, coa.models, store, run_id) as agents:
        trace = await run_mas(agents, ToolBox.from_config(coa.tools), task, coa)
"""

from .agents import Agents, RunState, Stop, open_agents, role_configs
from .history import history_text
from .loop import choose_variant, run_mas

__all__ = ["Agents", "RunState", "Stop", "choose_variant", "history_text", "open_agents", "role_configs", "run_mas"]
