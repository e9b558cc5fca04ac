import atexit
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# The suite never writes the user's Hugging Face caches: `datasets` caches a local folder by its
# name, so fixture rows cached under ~/.cache would be served back for the user's own folder of
# the same name. Set before anything imports datasets or huggingface_hub (they read it once);
# subprocesses the tests start inherit it.
HF_TEST_HOME = tempfile.mkdtemp(prefix="factory-tests-hf-")
atexit.register(shutil.rmtree, HF_TEST_HOME, True)
for variable in ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
    os.environ[variable] = os.path.join(HF_TEST_HOME, variable.lower())


# A SIGTERM (a CI timeout, `kill`) ends the suite as Ctrl-C does, so fixtures tear down what they started (a Ray
# cluster, servers) instead of the process vanishing; a SIGKILL is covered by tests/processes.py's die_with_parent.
def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _interrupt)

# The geo corpus (factory/corpus) a test builds goes to this session's folder, not the user's ~/.cache.
os.environ.setdefault("FACTORY_CORPUS_DIR", os.path.join(HF_TEST_HOME, "corpus"))

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
