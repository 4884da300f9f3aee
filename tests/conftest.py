"""Shared fixtures: real local servers (moto's DynamoDB/S3, the local fake Slack) live in tests/support."""

import os
import sys

# A run record that breaks the lifecycle's invariants fails the test (and, inherited, the
# bot processes it starts) instead of being repaired and logged as in production.
os.environ.setdefault("APPROVAL_BOT_STRICT_INVARIANTS", "1")

# Bytecode caches are written even where PYTHONDONTWRITEBYTECODE is set (container images
# often set it): without them every bot, CLI, demo and Lambda process the suite starts
# (several hundred) compiles the project's modules again, about 0.15 s of CPU each, and
# each xdist worker rewrites every test module's asserts again at collection. The caches
# go to __pycache__ folders, which git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

pytest_plugins = ["tests.support.aws", "tests.support.faults", "tests.support.lambda_", "tests.support.slack"]
