"""factory.coa: the Chain-of-Agents path (tasks -> multi-agent run -> distilled trajectory).

    outcome = run_coa(config)                 # config.coa: CoaConfig; resumable batch
    trace = await run_mas(agents, toolbox, task, coa)
    distilled = distill(trace, distill_prompt(trace, task))
    traces = load_agent_log("logs.jsonl")     # OpenAI tool-calling or smolagents logs

The trace schema is documented in docs/coa_trace.md.
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".batch": ("CoaOutcome", "record_trace", "run_coa", "run_coa_async", "run_coa_import"),
        ".config": ("CoaConfig", "RoleModels"),
        ".distill": ("Distillation", "distill", "distill_prompt"),
        ".importers": ("AgentLogError", "load_agent_log", "openai_trace", "smolagents_trace"),
        ".mas": ("open_agents", "run_mas"),
        ".stats": ("coa_stats",),
        ".store": ("coa_funnel", "failure_counts", "load_trace", "save_trace"),
        ".trace": ("Event", "LLMUsage", "ToolCall", "Trace"),
    },
)

__all__ = [
    "AgentLogError", "CoaConfig", "CoaOutcome", "Distillation", "Event", "LLMUsage", "RoleModels", "ToolCall",
    "Trace", "coa_funnel", "coa_stats", "distill", "distill_prompt", "failure_counts", "load_agent_log",
    "load_trace", "open_agents", "openai_trace", "record_trace", "run_coa", "run_coa_async", "run_coa_import",
    "run_mas", "save_trace", "smolagents_trace",
]  # fmt: skip
