"""Benchmarks that compare the bot against a baseline measured in the same process and run.

Run ``python -m bench`` (see ``bench/README.md``). Every number that matters is a ratio
against its baseline, because absolute times on a shared, noisy machine mean little.
"""
