"""Baselines every planner is compared with: all-fast, all-slow, first-touch, 2LM, greedy."""
