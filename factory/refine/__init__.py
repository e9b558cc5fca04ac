"""The AgentRefine path: persona → script → DM/player trajectory → verifier."""
