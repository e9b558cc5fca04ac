"""Agent trajectories in and out of the public interchange formats: ATIF (Harbor's Agent Trajectory
Interchange Format) and ADP (the Agent Data Protocol), through the native tool-calling form (export/native.py)."""
