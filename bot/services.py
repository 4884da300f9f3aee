"""The composition root: one place that turns settings into a store, an engine and a client.

Nothing here imports Strands: graph modules are loaded by ``GraphCatalog.load`` when a
caller decides it is time (server start-up, or after the ack on Lambda).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from slack_sdk.web.async_client import AsyncWebClient

from bot.publisher import SlackPublisher
from bot.settings import Settings
from bot.slack_client import web_client
from engine import RunEngine
from persistence import open_store
from persistence.base import RunStore

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph


class GraphCatalog:
    """The ``GraphSource`` over the ``graph_defs`` registry, loaded once on first need."""

    def __init__(self, *, extra_modules: Sequence[str]) -> None:
        self._extra = tuple(extra_modules)
        self._lock = threading.Lock()
        self._loaded = False

    @property
    def loaded(self) -> bool:
        return self._loaded

    def load(self) -> None:
        with self._lock:
            if not self._loaded:
                from graph_defs.registry import load_graph_modules

                load_graph_modules(self._extra)
                self._loaded = True

    def exists(self, name: str) -> bool:
        self.load()
        from graph_defs.registry import list_graphs

        return any(d.name == name for d in list_graphs())

    def build(self, name: str) -> Graph:
        self.load()
        from graph_defs.registry import build_graph

        return build_graph(name)

    def describe(self) -> list[tuple[str, str]]:
        self.load()
        from graph_defs.registry import list_graphs

        return [(d.name, d.description) for d in list_graphs()]


class Services:
    """Settings, the Slack client, and the store, catalog and engine built on first use.

    Built lazily so that an ack which needs no store (a slash command on Lambda, from a
    cold start) never pays for creating a DynamoDB client. The event loop's thread is the
    one that touches them first, so no lock is needed.
    """

    def __init__(self, *, settings: Settings, owner: str | None = None) -> None:
        self.settings = settings
        self._owner = owner
        self.client: AsyncWebClient = web_client(
            token=settings.slack_bot_token.get_secret_value(), base_url=settings.slack_api_url
        )

    @cached_property
    def store(self) -> RunStore:
        s = self.settings
        return open_store(table=s.dynamodb_table, sqlite_path=s.sqlite_path, bucket=s.snapshot_bucket)

    @cached_property
    def graphs(self) -> GraphCatalog:
        return GraphCatalog(extra_modules=self.settings.graph_modules)

    @cached_property
    def engine(self) -> RunEngine:
        return RunEngine(
            store=self.store,
            graphs=self.graphs,
            publisher=SlackPublisher(client=self.client),
            owner=self._owner,
            lease_seconds=self.settings.lease_seconds,
        )


def build_services(settings: Settings, *, owner: str | None = None) -> Services:
    return Services(settings=settings, owner=owner)
