"""Fewer young-generation collections while LLM clients are open.

Each call allocates some 40 containers, so at thousands of calls a second CPython's default threshold
(a young collection every 700 allocations) ran one every ~20 calls, each scanning the objects of every
call in flight: 10-20% of the client's CPU (benchmarks/llm_overhead.py). Most of those objects are freed
by reference counting anyway. While any client is open the threshold is 5,000; the last one to close
puts the default back, so the stages after the calls (filters, export over large tables) collect as
usual. Only CPython's default is changed: a threshold the program chose stays its own.
"""

from __future__ import annotations

import gc
import threading

CPYTHON_DEFAULT = 700
WHILE_CALLING = 5000

_lock = threading.Lock()
_open_clients = 0
_raised = False


def client_opened() -> None:
    global _open_clients, _raised
    with _lock:
        _open_clients += 1
        young, *older = gc.get_threshold()
        if _open_clients == 1 and young == CPYTHON_DEFAULT:
            gc.set_threshold(WHILE_CALLING, *older)
            _raised = True


def client_closed() -> None:
    global _open_clients, _raised
    with _lock:
        _open_clients = max(_open_clients - 1, 0)
        young, *older = gc.get_threshold()
        if _open_clients == 0 and _raised:
            _raised = False
            if young == WHILE_CALLING:  # nobody else changed it meanwhile
                gc.set_threshold(CPYTHON_DEFAULT, *older)
