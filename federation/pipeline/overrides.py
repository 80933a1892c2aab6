"""``--set key=value``: overrides of an experiment file, and how they meet its ``sweep``.

An override is read as the same key would be in the file: the value by
:func:`~federation.models.base.parse_value` (``5e8`` a number, NaN refused), the key as a dotted
path into the document, except under ``sweep``, whose keys are themselves dotted paths
(``--set sweep.workload.load=[0.1,0.5]`` sets the axis ``workload.load``).

One rule decides every overlap: **an override fixes the value it gives in every point**.  So

* a sweep axis whose value an override gives (the same key, or a mapping given for an ancestor
  that holds the axis' key) is no longer swept: the file's axis is dropped, with a note, and the
  points show the override's value (in ``results.json``, their ``resolved`` document); the same
  axis given by ``--set sweep...`` too is refused, naming both, since the command line would
  contradict itself;
* an override deeper than an axis (``--set machine.links.global.latency=...`` while the file
  sweeps ``machine`` over files) applies inside each point's value of the axis, and an axis
  deeper than an override (``--set workload={kind: synthetic, pattern: group_shift}`` while the file
  sweeps ``workload.load``) applies inside the override: assignments are made shallowest first;
* two overrides that give the same value (the same key twice, or a mapping holding the other's
  key) are refused: which one was meant cannot be guessed.

A machine given by path is inlined before an assignment reaches into ``machine.``, so overrides
and sweeps can change a machine file's fields; its errors still name that file.

A list position is written ``jobs.0.workload.load``, or ``jobs[0].workload.load`` as error
messages write it (both are the same key), in ``--set`` and in a file's ``sweep`` alike; a
file's axis keeps its spelling in the points' ``sweep`` (and in messages), and two spellings
of one axis are refused.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from federation.errors import ConfigError
from federation.models.base import parse_value, read_document
from federation.pipeline.points import dotted

SOURCE = "--set"


@dataclass(frozen=True)
class Override:
    """One ``--set key=value``."""

    key: str  #: dotted, list positions as parts (``jobs.0.workload.load``)
    value: Any
    text: str  #: the value as typed, for messages
    written: str = ""  #: the key as typed (``jobs[0].workload.load``), for messages

    @property
    def depth(self) -> int:
        return len(self.key.split("."))

    @property
    def axis(self) -> str | None:
        """The sweep axis this override sets (``sweep.workload.load`` -> ``workload.load``)."""
        return self.key[len("sweep."):] if self.key.startswith("sweep.") else None

    def __str__(self) -> str:
        return f"--set {self.written or self.key}={self.text}"



def parse_override(text: str) -> Override:
    """``key.path=value``, the value read as in a YAML file."""
    if "=" not in text:
        raise ConfigError(f"expected key=value, got {text!r}", source=SOURCE)
    key, _, raw = text.partition("=")
    written = key.strip()
    if not written:
        raise ConfigError(f"empty key in {text!r}", source=SOURCE)
    key = dotted(written)
    if "[" in key or "]" in key:
        raise ConfigError(f"{written!r}: a list position is a whole number after a field "
                          "name: write jobs.0.workload.load (or jobs[0].workload.load)",
                          source=SOURCE)
    if any(not part.strip() for part in key.split(".")):
        raise ConfigError(f"{key!r} has an empty field name (write a.b.c)", source=SOURCE)
    if key == "sweep.":
        raise ConfigError("name the swept field: sweep.workload.load=[...]", source=SOURCE)
    return Override(key, parse_value(raw, SOURCE, written), raw.strip(),
                    written if written != key else "")


def gives(key: str, value: Any, path: str) -> bool:
    """Whether setting ``key`` to ``value`` fixes the value at the dotted ``path``: the same
    key, or an ancestor whose (mapping) value holds the rest of the path."""
    if path == key:
        return True
    if not path.startswith(key + "."):
        return False
    if key == "sweep":  # its keys are dotted paths themselves
        rest = dotted(path[len("sweep."):])
        return isinstance(value, dict) and any(dotted(str(k)) == rest for k in value)
    cur = value
    for part in path[len(key) + 1:].split("."):
        if isinstance(cur, list):  # jobs=[...] gives jobs.1.workload.load
            at = list_item(cur, part)
            if at is None:
                return False
            cur = cur[at]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return False
    return True


def check_conflicts(sets: list[Override], doc: dict[str, Any] | None = None) -> None:
    """Refuse two overrides that give the same value (see the module docstring).  A list item
    given by name is the item at its position in ``doc`` (the file as read):
    ``jobs.bg.workload.load`` and ``jobs.1.workload.load`` are one key when job 1 is ``bg``."""
    for i, a in enumerate(sets):
        for b in sets[i + 1:]:
            ka, kb = canonical(a.key, doc), canonical(b.key, doc)
            if ka == kb:
                raise ConfigError(f"{a.written or a.key} is given twice ({a} and {b}); give "
                                  "it once", source=SOURCE)
            for (x, kx), (y, ky) in (((a, ka), (b, kb)), ((b, kb), (a, ka))):
                if gives(kx, x.value, ky):
                    raise ConfigError(f"{x} and {y} both give {y.written or y.key}; give it "
                                      "once", source=SOURCE)


def canonical(key: str, doc: dict[str, Any] | None) -> str:
    """``key`` (dotted) with list items given by name at their position in ``doc``, the axis
    of a ``sweep.`` key too: the form in which two spellings of one field compare equal."""
    key = dotted(key)
    if key.startswith("sweep."):
        return "sweep." + positional(key[len("sweep."):], doc)
    return positional(key, doc)


def apply_sweep_overrides(doc: dict[str, Any], sets: list[Override]) -> set[str]:
    """Write the ``sweep`` overrides into ``doc``; returns the axes the command line gave.
    A file axis that is the same field under another spelling (``jobs[0]``, or the job's
    name for its position) is replaced, not kept beside it."""
    given: set[str] = set()
    for o in sets:
        if o.key == "sweep":
            doc["sweep"] = o.value
            if isinstance(o.value, dict):
                given |= {str(k) for k in o.value}
        elif o.axis is not None:
            sweep = doc.get("sweep")
            if sweep is None:
                sweep = doc["sweep"] = {}
            if not isinstance(sweep, dict):
                raise ConfigError(f"cannot set {o.key}: the file's sweep is not a mapping",
                                  source=SOURCE)
            same = canonical(o.axis, doc)
            for axis in [a for a in sweep if a != o.axis and canonical(str(a), doc) == same]:
                del sweep[axis]  # the file's spelling of the same axis (jobs[0], a name)
            sweep[o.axis] = o.value
            given.add(o.axis)
    return given


def drop_overridden_axes(doc: dict[str, Any], sets: list[Override], given: set[str],
                         source: str, sweeps: list[Override] | None = None) -> list[str]:
    """Remove from ``doc['sweep']`` the axes whose value an override of ``sets`` gives;
    returns a note per axis dropped.  An axis the command line itself sweeps (one of
    ``sweeps``, named in the refusal) is refused instead."""
    sweep = doc.get("sweep")
    if not isinstance(sweep, dict):
        return []
    check_axes(sweep, given, source, doc)
    notes = []
    for axis in list(sweep):
        key = canonical(str(axis), doc)
        o = next((o for o in sets if gives(canonical(o.key, doc), o.value, key)), None)
        if o is None:
            continue
        if axis in given:  # name the override that sweeps it, as the docs promise
            s = next((s for s in sweeps or [] if s.key == "sweep" or (
                s.axis is not None and canonical(s.axis, doc) == key)), None)
            raise ConfigError(f"{o} fixes {axis}, which {s or '--set sweep...'} sweeps; give "
                              "one of them", source=SOURCE)
        values = sweep.pop(axis)
        n = f"{len(values)} values" if isinstance(values, list) else "its values"
        notes.append(f"{o} replaces the sweep over {axis} ({n}) in {source}: every point "
                     f"has {axis} = {_text(_value_at(o, key, doc))}")
    return notes


def check_axes(sweep: dict[Any, Any], given: set[str], source: str,
               doc: dict[str, Any] | None = None) -> None:
    """Refuse a sweep key whose list position is not ``.3`` or ``[3]`` after a field name,
    and one axis written twice (``jobs.0.x``, ``jobs[0].x`` and, when job 0 is ``fg``,
    ``jobs.fg.x``: which values would the points take?), naming the file's entry (``--set``
    when the command line gave both)."""
    seen: dict[str, str] = {}
    for axis in map(str, sweep):
        at = SOURCE if axis in given else source
        key = dotted(axis)
        if "" in key.split("."):  # "", ".", "workload..load": refused as the top level's key
            raise ConfigError("an axis is a dotted field path (workload.load); this one has an "
                              "empty part", source=at, path=f"sweep.{axis}")
        if "[" in key or "]" in key:
            raise ConfigError("a list position is a whole number after a field name: write "
                              "jobs.0.workload.load (or jobs[0].workload.load)", source=at,
                              path=f"sweep.{axis}")
        key = canonical(key, doc)
        if key in seen:
            both = SOURCE if seen[key] in given and axis in given else source
            raise ConfigError(f"{seen[key]!r} and {axis!r} are the same axis ({key}); give it "
                              "once", source=both, path=f"sweep.{axis}")
        seen[key] = axis


def _value_at(o: Override, path: str, doc: dict[str, Any] | None = None) -> Any:
    """The value override ``o`` gives at ``path`` (which it gives: see :func:`gives`; both
    in :func:`canonical` form)."""
    cur = o.value
    for part in path[len(canonical(o.key, doc)):].split(".")[1:]:
        cur = cur[list_item(cur, part)] if isinstance(cur, list) else cur[part]
    return cur


def _text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, default=str)


class Assigner:
    """Writes dotted keys into a document, inlining a machine given by path (each file read
    once) before a key reaches into ``machine.``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._machines: dict[str, dict[str, Any]] = {}

    def assign(self, doc: dict[str, Any], items: list[tuple[str, Any]],
               source: str) -> str | None:
        """Set each ``(key, value)`` of ``items``, shallowest first (a deeper key refines a
        shallower one); returns the path of the machine file inlined, if one was."""
        machine_source = None
        for key, value in sorted(items, key=lambda kv: len(dotted(kv[0]).split("."))):
            if key.startswith("machine.") and isinstance(doc.get("machine"), str):
                machine_source = self.inline_machine(doc)
            elif key == "machine":
                machine_source = None
            set_path(doc, key, copy.deepcopy(value), source)
        return machine_source

    def inline_machine(self, doc: dict[str, Any]) -> str:
        m = doc["machine"]
        path = Path(m) if Path(m).is_absolute() else self.base / m
        key = str(path)
        if key not in self._machines:
            self._machines[key] = read_document(path)
        doc["machine"] = copy.deepcopy(self._machines[key])
        return key


def set_path(doc: dict[str, Any], key: str, value: Any, source: str) -> None:
    """Set ``a.b.c`` in a nested mapping, creating mappings on the way.  A part that meets a
    list picks one of its items: by position (``jobs.1.workload.load``) or, for a list of
    named mappings such as ``jobs``, by name (``jobs.background.workload.load``); a position
    may be written ``jobs[1]`` as well, as in a file's ``sweep``."""
    parts = dotted(key).split(".")
    cur: Any = doc
    for i, part in enumerate(parts[:-1]):
        slot: int | str = part
        if isinstance(cur, list):
            at = list_item(cur, part)
            nxt = cur[at] if at is not None else None
            if at is None or nxt is None:
                raise ConfigError(f"cannot set {key!r}: {'.'.join(parts[:i])} has no item "
                                  f"{part!r} (give its position from 0, or the name of one "
                                  "of its items)", source=source)
            slot = at
        else:
            nxt = cur.get(part)
            if nxt is None:
                nxt = {}
        if not isinstance(nxt, dict | list):
            raise ConfigError(
                f"cannot set {key!r}: {'.'.join(parts[: i + 1])} is not a mapping", source=source
            )
        # the path is copied as it is walked: a YAML alias (``workload: *w``) shares its
        # mapping with the anchor's place, which the key does not name and must keep its value
        nxt = copy.copy(nxt)
        cur[slot] = nxt
        cur = nxt
    last = parts[-1]
    if isinstance(cur, list):
        at = list_item(cur, last)
        if at is None:
            raise ConfigError(f"cannot set {key!r}: {'.'.join(parts[:-1])} has no item "
                              f"{last!r}", source=source)
        cur[at] = value
        return
    cur[last] = value


def list_item(items: list[Any], part: str) -> int | None:
    """The position in ``items`` a dotted-key part names: ``3`` (a position) or the ``name``
    of one item; ``None`` when there is no such item."""
    if part.isascii() and part.isdigit():  # '²' is a digit to str.isdigit, not to int()
        k = int(part)
        return k if k < len(items) else None
    named = [k for k, x in enumerate(items) if isinstance(x, dict) and x.get("name") == part]
    return named[0] if len(named) == 1 else None


def blame(exc: ConfigError, sets: list[Override], source: str,
          doc: dict[str, Any] | None = None) -> ConfigError:
    """``exc`` saying which override gave the value it refuses, when one did: the message
    names the file the field belongs to, where the user would otherwise look in vain.

    An error that lists several problems (an override giving a whole mapping, e.g.
    ``--set workload={...}``, can break several of its fields) becomes one line: the problems
    joined by ``;``, the note once at the end when one override gave them all, else after
    each problem it explains.  ``doc``, the file as read, turns a list item given by name
    (``jobs.background.workload.load``) into the position error paths use (``jobs[1]``)."""
    if not sets:
        return exc
    problems = listed_problems(exc)
    if problems is None:
        o = _giver(exc, exc.path, sets, source, doc) if exc.path else None
        if o is None:
            return exc
        return ConfigError(f"{exc.message} (the value comes from {o})", source=exc.source,
                           path=exc.path)
    givers = [_giver(exc, path, sets, source, doc) for path, _ in problems]
    if all(o is None for o in givers):
        return exc
    one = givers[0] if all(o is givers[0] for o in givers) else None
    parts = [f"{path}: {msg}" + (f" (the value comes from {o})" if o and not one else "")
             for (path, msg), o in zip(problems, givers, strict=True)]
    text = "; ".join(parts) + (f" (the value comes from {one})" if one else "")
    first, _, rest = text.partition(": ")
    return ConfigError(rest, source=exc.source, path=first)


def listed_problems(exc: ConfigError) -> list[tuple[str, str]] | None:
    """The ``(path, message)`` of each problem of an error listing several (one per line,
    as :func:`~federation.models.base.validation_error` writes them); ``None`` for a
    one-problem error."""
    if exc.path or not exc.message.startswith("\n  "):
        return None
    lines = [line for line in exc.message.split("\n  ") if line]
    if any(": " not in line for line in lines):
        return None
    return [(path, msg) for path, _, msg in (line.partition(": ") for line in lines)]


def _giver(exc: ConfigError, path: str, sets: list[Override], source: str,
           doc: dict[str, Any] | None) -> Override | None:
    """The override that gave the value at ``path`` of ``exc``'s file, if one did: the most
    precise one that reaches it (``--set machine=m.yaml --set machine.router.vcs=1``, in
    either order: the second, which sets that very value on whichever machine), else the last
    that set a part of it."""
    full = dotted(path if exc.source == source else f"machine.{path}")
    best: tuple[int, Override] | None = None
    part: Override | None = None
    for o in sets:
        for key in {positional(o.key, doc), positional(o.axis or o.key, doc)}:
            if full == key or full.startswith(key + "."):
                if best is None or len(key) >= best[0]:
                    best = (len(key), o)
            elif key.startswith(full + "."):
                part = o
    return best[1] if best is not None else part


def positional(key: str, doc: dict[str, Any] | None) -> str:
    """``key`` with each list item given by name replaced by its position in ``doc``
    (``jobs.background.x`` -> ``jobs.1.x``), as far as ``doc`` has the path."""
    parts = key.split(".")
    cur: Any = doc
    for i, part in enumerate(parts):
        if isinstance(cur, list):
            at = list_item(cur, part)
            if at is None:
                break
            parts[i] = str(at)
            cur = cur[at]
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            break
    return ".".join(parts)
