"""The A2A Expectations extension (https://rsaxb.com/a2a/expectations/v1) for agents written in
Python, and a client for the a2a-watcher's HTTP API.

- `models`: the wire types, generated from the JSON Schemas the watcher publishes
  (`Expectation`, `Fact`, `Lapse`, `ExpectationsParams`, ... and the API's answers), checked on
  construction (`ModelError`), with `to_dict`/`from_dict` for the camelCase JSON;
- `metadata`: where they go in A2A metadata (`expectations_metadata`, `lapse_from_metadata`, ...);
- `client`: `WatcherClient` (report facts, list lapse tasks, read a subject, retry);
- `sdk` (needs `a2a-sdk`): declare the extension on an `AgentCard`, raise expectations on an
  `Artifact`, read a lapse task from a `Message` or `Task`, register push to the watcher.
"""

from ._runtime import ModelError
from .client import WatcherClient, WatcherError
from .metadata import (
    URI,
    expectations_metadata,
    facts_metadata,
    lapse_from_metadata,
    parse_instant,
    utc,
    withdraw_metadata,
)
from .models import *  # noqa: F403 (the generated module's __all__)
from .models import __all__ as _models_all

__version__ = "0.1.0"
"""The kit's version: the watcher's (the workspace's Cargo.toml), which a test checks."""

__all__ = [
    "ModelError",
    "URI",
    "WatcherClient",
    "WatcherError",
    "expectations_metadata",
    "facts_metadata",
    "lapse_from_metadata",
    "parse_instant",
    "utc",
    "withdraw_metadata",
    *_models_all,
]
