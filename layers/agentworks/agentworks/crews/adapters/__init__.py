"""Agent adapters: the pluggable part that does a Crew's thinking (SPEC §8).

One interface (`base.Adapter`), one module per adapter type.
"""
