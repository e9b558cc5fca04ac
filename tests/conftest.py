import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from loopback_server import LoopbackServer  # noqa: E402

from factory.llm import LLMConfig  # noqa: E402


@pytest.fixture
def server():
    srv = LoopbackServer()
    srv.start_in_thread()
    yield srv
    srv.stop()


@pytest.fixture
def fast_config(server):
    """An LLM config pointed at the loopback server, with short backoffs."""

    def make(**overrides):
        values = dict(
            model="loopback", base_url=server.base_url, backoff_base_s=0.01, backoff_max_s=0.05,
            timeout_s=5, max_retries=3, cooldown_s=0.05,
        )  # fmt: skip
        values.update(overrides)
        return LLMConfig(**values)

    return make
