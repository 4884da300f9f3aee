"""Run ids and the owner names that leases carry."""

from __future__ import annotations

import base64
import os
import secrets
import socket


def new_run_id() -> str:
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
