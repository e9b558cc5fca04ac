"""factory.llm: the one async client every stage uses (DESIGN rule 1).

No other module imports openai or litellm.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch prices at import

from ..lazy_exports import lazy_exports  # noqa: E402

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".client": ("LLMClient",),
        ".config": ("LLMConfig", "LocalModelConfig"),
        ".providers": ("Endpoint", "resolve_endpoint"),
        ".request": ("Request", "Result", "request_key"),
        ".structured": ("OutputInvalid", "output_spec"),
    },
)

__all__ = [
    "Endpoint", "LLMClient", "LLMConfig", "LocalModelConfig", "OutputInvalid", "Request", "Result",
    "output_spec", "request_key", "resolve_endpoint",
]  # fmt: skip
