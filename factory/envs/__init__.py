"""Environments an agent can act in, for RL and evaluation (issue 29, AutoCoA's RL stages).

The refine worlds as environments (reset from a stored script, step with a typed action, reward from the
goal), their text-game interface, a verl adapter, and a simulated mode where a model plays the world.
"""
