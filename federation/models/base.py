"""Base of every schema model, and the YAML/JSON file loader with located error messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from federation.errors import ConfigError

M = TypeVar("M", bound="FederationModel")


class FederationModel(BaseModel):
    """Frozen, strict about unknown keys: a typo in a file is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class Params(FederationModel):
    """Base of a component's parameter model (a plugin's ``Params``)."""


def read_document(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON file into a mapping; every failure is a :class:`ConfigError`."""
    p = Path(path)
    if not p.exists():
        raise ConfigError("file not found", source=str(path))
    if p.is_dir():
        raise ConfigError("is a directory, expected a YAML or JSON file", source=str(path))
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", source=str(path)) from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON at line {exc.lineno}: {exc.msg}",
                          source=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML{where}: {problem}", source=str(path)) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping at the top level, got {type(data).__name__}",
                          source=str(path))
    return data


def format_loc(loc: tuple[Any, ...], prefix: str = "") -> str:
    """Turn a pydantic error location into a dotted field path (``topology.p``, ``jobs[0]``)."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # pydantic adds validator names for function validators; they are noise to users
            if part.startswith("function-") or part in ("tagged-union",):
                continue
            out = f"{out}.{part}" if out else str(part)
    return out


def validation_error(exc: ValidationError, source: str | None, prefix: str = "") -> ConfigError:
    """Convert a pydantic error into one :class:`ConfigError` that names file and field paths.

    All problems are listed (one per line) so a user fixes a file in one pass.
    """
    lines = []
    first_path = None
    for err in exc.errors(include_url=False):
        path = format_loc(tuple(err["loc"]), prefix) or "(top level)"
        first_path = first_path or path
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        elif msg.startswith("Assertion failed, "):
            msg = msg[len("Assertion failed, "):]
        lines.append(f"{path}: {msg}")
    if len(lines) == 1:
        return ConfigError(lines[0].split(": ", 1)[1], source=source, path=first_path)
    return ConfigError("\n  " + "\n  ".join(lines), source=source)


def validate_model(model: type[M], data: Any, source: str | None, prefix: str = "") -> M:
    """Validate ``data`` as ``model``; errors name ``source`` and the field path."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source, prefix) from None
