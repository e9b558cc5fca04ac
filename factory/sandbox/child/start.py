"""The sandbox child's entry point: `python -s -S start.py JOB.json`, the runner's job (runner.py).

Python compiles a script from source at every start but imports a module from its cached
bytecode, so the runner is a module and this file stays two lines.
"""

import runner

runner.main()
