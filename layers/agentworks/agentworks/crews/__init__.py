"""Crews (hosted agents) and their structured functions (SPEC §4, F1–F8; §8 adapters)."""
