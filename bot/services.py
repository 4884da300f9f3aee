"""The composition root: one place that turns settings into a store, an engine and a client.

Nothing here imports Strands: graph modules are loaded by ``GraphCatalog.load`` when a
caller decides it is time (server start-up, or after the ack on Lambda).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_access import ConfigError, SlackAccess
from bot.slack_client import web_client

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph

    from bot.directory import SlackDirectory
    from bot.home import RunViews
    from bot.settings import Settings
    from bot.workspace import Workspace
    from engine import RunEngine
    from engine.inbox import Inbox
    from engine.policy import Policy
    from engine.store import RunStore

logger = logging.getLogger(__name__)

NO_GRAPHS_WARNING = (
    "no graphs are registered (the slash command's list is empty and every run is refused): "
    "set EXAMPLE_GRAPHS=true for the example graphs, or GRAPH_MODULES to your graph modules (comma-separated)"
)


class GraphCatalog:
    """The ``GraphSource`` over the ``graph_defs`` registry, loaded once on first need.

    ``extra_modules`` and ``examples`` are the ``GRAPH_MODULES`` and ``EXAMPLE_GRAPHS``
    settings. A process that ends up with no graph at all says so once, in a warning
    naming both settings: otherwise the first sign is a "no graphs" reply in Slack.
    """

    def __init__(self, *, extra_modules: Sequence[str], examples: bool = False) -> None:
        self._extra = tuple(extra_modules)
        self._examples = examples
        self._lock = threading.Lock()
        self._loaded = False

    @property
    def loaded(self) -> bool:
        return self._loaded

    def load(self) -> None:
        with self._lock:
            if not self._loaded:
                from graph_defs.registry import list_graphs, load_graph_modules

                load_graph_modules(self._extra, examples=self._examples)
                self._loaded = True
                if not list_graphs():
                    logger.warning(NO_GRAPHS_WARNING)

    def exists(self, name: str) -> bool:
        self.load()
        from graph_defs.registry import list_graphs

        return any(d.name == name for d in list_graphs())

    def build(self, name: str) -> Graph:
        self.load()
        from graph_defs.registry import build_graph

        return build_graph(name)

    def policy(self, name: str) -> Policy:
        """The approval policy of the graph registered as ``name``.

        Raises:
            graph_defs.UnknownGraph: nothing is registered under that name.
        """
        self.load()
        from graph_defs.registry import get_graph

        return get_graph(name).policy

    def describe(self) -> list[tuple[str, str]]:
        self.load()
        from graph_defs.registry import list_graphs

        return [(d.name, d.description) for d in list_graphs()]


class Services:
    """Slack access and client, and the settings, store, catalog and engine built on first use.

    Built lazily so that an ack never pays for what it does not use: a slash command on a
    cold Lambda needs neither a DynamoDB client nor the full, pydantic-checked settings
    (``bot.slack_access`` says why). The event loop's thread is the one that touches them
    first, so no lock is needed.
    """

    def __init__(self, *, slack: SlackAccess, settings: Callable[[], Settings], owner: str | None = None) -> None:
        self.slack = slack
        self._settings = settings
        self._owner = owner
        self.client: AsyncWebClient = web_client(token=slack.bot_token, base_url=slack.api_url)

    @cached_property
    def settings(self) -> Settings:
        return self._settings()

    @cached_property
    def store(self) -> RunStore:
        """The store the settings name.

        Raises:
            ConfigError: the SQLite file (``SQLITE_PATH``) cannot be created or opened.
            botocore's setting errors: for DynamoDB, e.g. ``NoRegionError``.
        """
        from engine.store import StoreError
        from persistence import open_store

        s = self.settings
        try:
            return open_store(
                table=s.dynamodb_table,
                sqlite_path=s.sqlite_path,
                bucket=s.snapshot_bucket,
                retention_days=s.run_retention_days,
            )
        except (OSError, StoreError) as error:
            if s.dynamodb_table:
                raise
            reason = error.strerror if isinstance(error, OSError) else str(error)
            raise ConfigError(
                f"SQLITE_PATH={s.sqlite_path!r} cannot be opened ({reason}); "
                "set SQLITE_PATH to a file in a writable folder (or DYNAMODB_TABLE to use DynamoDB)"
            ) from error

    @cached_property
    def graphs(self) -> GraphCatalog:
        return GraphCatalog(extra_modules=self.settings.graph_modules, examples=self.settings.example_graphs)

    def loaded_graphs(self) -> list[tuple[str, str]] | None:
        """The graphs and their descriptions if their modules are loaded already, else None.

        Never loads them, nor reads the settings: a slash command's ack may ask (to list
        the graphs after a bare ``run``) and must stay light on a cold Lambda.
        """
        catalog = self.__dict__.get("graphs")  # only if ``graphs`` (a cached_property) was built
        return catalog.describe() if isinstance(catalog, GraphCatalog) and catalog.loaded else None

    @cached_property
    def directory(self) -> SlackDirectory:
        from bot.directory import SlackDirectory

        return SlackDirectory(client=self.client)

    @cached_property
    def workspace(self) -> Workspace:
        from bot.workspace import Workspace

        return Workspace(client=self.client)

    @cached_property
    def inbox(self) -> Inbox:
        from engine.inbox import Inbox

        return Inbox(store=self.store, directory=self.directory, clock=time.time)

    @cached_property
    def views(self) -> RunViews:
        """App Home tabs: published on open, refreshed when a run changes for their owners."""
        from bot.home import RunViews

        return RunViews(
            client=self.client,
            store=self.store,
            inbox=self.inbox,
            directory=self.directory,
            workspace=self.workspace,
            command=self.slack.command,
        )

    @cached_property
    def engine(self) -> RunEngine:
        from bot.publisher import SlackPublisher
        from engine import RunEngine
        from engine.start_limits import StartLimits

        live = self.settings.live_progress
        publisher = SlackPublisher(
            client=self.client, workspace=self.workspace, streaming=live == "stream", views=self.views
        )
        return RunEngine(
            store=self.store,
            graphs=self.graphs,
            publisher=publisher,
            owner=self._owner,
            lease_seconds=self.settings.lease_seconds,
            directory=self.directory,
            default_expires_after=self.settings.ask_expires_after,
            ask_alarm_after=self.settings.ask_alarm_after,
            retention_seconds=self.settings.run_retention_days * 86400,
            progress=live != "off",
            start_limits=StartLimits(
                per_minute=self.settings.max_starts_per_minute, waiting=self.settings.max_waiting_runs
            ),
        )


def build_services(settings: Settings, *, owner: str | None = None) -> Services:
    return Services(slack=settings.slack_access(), settings=lambda: settings, owner=owner)
