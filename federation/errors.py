"""Exceptions shown to users.

Every error a user can cause (a bad file, unit, parameter or plugin) is a :class:`FederationError`.
The CLI prints its message, exits with status 2 and shows no traceback; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import os


class FederationError(Exception):
    """Base class of errors that are displayed to the user as one readable message."""

    exit_code = 2


class ConfigError(FederationError):
    """A machine or experiment file, or a ``--set`` override, is invalid.

    ``source`` is the file (or ``"--set"``) and ``path`` the field path inside it, so the
    message can say exactly where to look.
    """

    def __init__(self, message: str, source: str | None = None, path: str | None = None) -> None:
        self.message = message
        self.source = source
        self.path = path
        where = ""
        if source:
            where = f"{source}"
        if path:
            where = f"{where}: {path}" if where else path
        super().__init__(f"{where}: {message}" if where else message)


def located(exc: ConfigError, source: str) -> ConfigError:
    """``exc`` with ``source`` filled in when the raiser did not know the file."""
    if exc.source is not None:
        return exc
    return ConfigError(exc.message, source=source, path=exc.path)


class PluginError(FederationError):
    """A plugin failed to load, registered a duplicate name or returned something invalid."""

    def __init__(self, message: str, plugin: str | None = None) -> None:
        self.plugin = plugin
        super().__init__(f"plugin {plugin!r}: {message}" if plugin else message)


class TopologyError(FederationError):
    """A topology's parameters cannot be realised, or the built graph is invalid."""


class RoutingError(FederationError):
    """The routing cannot run on this machine (e.g. too few virtual channels)."""


class SimulationError(FederationError):
    """The simulation could not finish, e.g. a deadlock; the message names the stuck ports."""


class BackendUnavailable(FederationError):
    """An engine is registered but the program or library it drives is not installed."""


class OutputError(FederationError):
    """An output file or folder could not be written (disk full, quota, permissions)."""


def os_reason(exc: OSError) -> str:
    """``No space left on device``: the system's words for the error, without pyarrow's or
    Python's wrapping."""
    if exc.errno:
        return os.strerror(exc.errno)
    return exc.strerror or str(exc) or type(exc).__name__
