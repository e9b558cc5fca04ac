"""`factory run`: the whole job from one config (config.py, stages.py, ledger.py, command.py)."""
