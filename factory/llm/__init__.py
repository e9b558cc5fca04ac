"""factory.llm: the one async client every stage uses (DESIGN rule 1).

No other module imports openai or litellm.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch prices at import

from .client import LLMClient  # noqa: E402
from .config import LLMConfig, LocalModelConfig  # noqa: E402
from .providers import Endpoint, resolve_endpoint  # noqa: E402
from .request import Request, Result, request_key  # noqa: E402
from .structured import OutputInvalid, output_spec  # noqa: E402

__all__ = [
    "Endpoint", "LLMClient", "LLMConfig", "LocalModelConfig", "OutputInvalid", "Request", "Result",
    "output_spec", "request_key", "resolve_endpoint",
]  # fmt: skip
