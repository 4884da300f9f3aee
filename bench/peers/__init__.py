"""Beside the peers: what one approval cycle costs us, LangGraph and Strands on DynamoDB.

Why it exists: "35 requests for LangGraph, 7 for Strands, neither exactly-once" was once
measured by hand; this package measures it again on every run, beside our own figure, with
the same graph, the same moto server and the same counting middleware, so that anyone can
check it. The peers are an optional extra (``peers`` in pyproject.toml) installed into a venv
of their own by ``bash bench/peers/run.sh``; our own side needs nothing extra.
"""
