"""The one reader of a run's output folder: ``results.json``, ``performance.json`` and the
per-point tables, each checked before anything is drawn from it.

``federation plot``, ``federation report`` and ``run --plot`` read folders only through
:func:`load_folder`.  A folder may come from anywhere (another machine, an older version, a
hand edit, a copy that mixed two runs), and a figure drawn from a damaged one is a wrong answer
that looks right, so the reader refuses, with one :class:`~federation.errors.ConfigError` naming
the file and the field, anything the figures could not draw truthfully:

* ``results.json``: read like every other document (:func:`~federation.models.base.read_document`:
  a key given twice is refused), then validated *strictly* against
  :class:`~federation.results.model.RunResult` (``"0.3"`` is not a number); a NaN or infinite
  number anywhere, a negative figure in a summary, a non-numeric load, a point index given twice,
  or ``missing_points`` contradicting the finished points are refused.
* ``files`` entries: a relative path of plain names that stays inside the folder (no ``..``, no
  absolute path, no symbolic link leading out) and names a regular file; a table (``packets``,
  ``ports``, ``messages``) is ``.parquet`` or ``.csv``.  The SST adapter files its configuration
  as ``sst-N/config.py``, so a sub-folder is allowed, an escape is not.
* tables: the columns the figures read (:data:`TABLE_COLUMNS`) present, of their type, without
  empty cells; values in range (no NaN utilisation, no packet delivered before it was created,
  no more hops than the engine's hop limit); and belonging to the point that names them: their
  ``point`` column is that point's index, and what the point's summary says of them holds (the
  measured packets counted, the busiest links' figures, the mean message completion).  A table
  copied in from another point or run is refused unless it carries the same figures.
* each point against its own machine (:mod:`federation.plots.machines`: a sweep over the
  machine runs several), and the range and consistency checks whose bound is a fact of how the
  engine counts (:mod:`federation.plots.checks`: percentiles in order, utilisations a link can
  reach, classes the point has, one row per port and interval, ``status`` agreeing with the
  missing points).
* the ports of the ports and link-series tables, and the summary's busiest links, stated as
  the point's machine wires them (:mod:`federation.plots.wiring`: a permuted router or port
  column, or a table of another machine of the same size, is refused).
* a load listed twice in one series: the runner runs it as the same simulation, so two such
  points that measured different figures are refused (:mod:`federation.plots.sweeps`).

Only the columns the figures read are loaded, so a folder with large packets tables costs a
fraction of its size in memory.  Nothing here imports matplotlib.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from federation.errors import ConfigError
from federation.models.base import non_finite, read_document, validation_error
from federation.plots.checks import (
    check_document,
    check_link_series,
    check_loads,
    check_ports,
    first_number,
)
from federation.plots.machines import PointMachine, point_machines
from federation.plots.sweeps import LOAD_KEY, check_repeated_loads
from federation.plots.wiring import check_busiest_links
from federation.results.model import RESULTS_SCHEMA_VERSION, PointResult, RunResult

#: Per table, the columns the figures read and their kind: ``int`` (any integer type), ``number``
#: (integer or floating point), ``bool``, ``str``.  Every table has ``point`` (the writer's).
TABLE_COLUMNS: dict[str, dict[str, str]] = {
    "packets": {"point": "int", "created_ps": "int", "delivered_ps": "int", "hops": "int",
                "measured": "bool"},
    "ports": {"point": "int", "port": "int", "router": "int", "link_class": "str",
              "utilization_window": "number"},
    "messages": {"point": "int", "completed_ps": "int", "completion_ps": "int",
                 "measured": "bool"},
    "link_series": {"point": "int", "start_ps": "int", "end_ps": "int", "port": "int",
                    "class": "int",
                    "bytes": "int", "utilization": "number"},
}
#: columns read when the table has them: the messages' ``job`` (per-job distributions) and
#: ``background`` (a rank-program run's background messages, drawn apart from the programs'),
#: the ports' wiring (checked against the machine's) and SST's window bytes (its utilisation's)
OPTIONAL_COLUMNS: dict[str, dict[str, str]] = {"messages": {"job": "str", "background": "bool"},
                                               "link_series": {"link_class": "str",
                                                               "router": "int"},
                                               "ports": {"node": "int", "peer_router": "int",
                                                         "local_port": "int",
                                                         "bytes_window": "int"}}
#: optional columns read only to be checked (the figures do not draw them)
CHECKED_ONLY: dict[str, tuple[str, ...]] = {"ports": ("node", "peer_router", "local_port",
                                                      "bytes_window")}
TABLE_SUFFIXES = (".parquet", ".csv")
_NUMPY = {"int": np.int64, "number": np.float64, "bool": np.bool_, "str": object}


def hop_limit(routers: int) -> int:
    """The native engine's hop limit (``4 x routers + 8``): a measured packet that made more
    router-to-router hops than this would have been stopped as a routing loop."""
    return 4 * routers + 8


@dataclass
class ResultFolder:
    """One run's output folder, read and checked by :func:`load_folder`; tables are read (and
    checked) once, the first time they are asked for."""

    path: Path
    result: RunResult
    label: str = ""
    #: ``performance.json``: per point (in the order of ``result.points``) its wall-clock
    #: figures, or ``None``; empty when the folder has none
    performance: list[dict[str, float] | None] = field(default_factory=list)
    #: each point's machine, by point index (:func:`~federation.plots.machines.point_machines`)
    machines: dict[int, PointMachine] = field(default_factory=dict)
    _tables: dict[tuple[int, str], dict[str, np.ndarray]] = field(default_factory=dict,
                                                                   repr=False)

    def point(self, index: int) -> PointResult:
        for p in self.result.points:
            if p.index == index:
                return p
        raise KeyError(index)

    def has_table(self, point: PointResult, name: str) -> bool:
        """Whether the point has the table (its file was checked to exist on loading)."""
        return name in point.files

    def table(self, point: PointResult, name: str) -> dict[str, np.ndarray]:
        """The ``packets``, ``ports`` or ``messages`` table of a point: the columns of
        :data:`TABLE_COLUMNS` as NumPy arrays (strings as object arrays), checked."""
        key = (point.index, name)
        if key not in self._tables:
            f = point.files.get(name)
            if f is None:
                raise ConfigError(f"point {point.index} has no {name} table (outputs.{name} was "
                                  "off)", source=str(self.path))
            cols = read_table(self.path / f, name)
            check_table(cols, name, point, self.machine_of(point), str(self.path / f),
                        str(self.path / "results.json"))
            for col in CHECKED_ONLY.get(name, ()):  # read for the checks, not kept
                cols.pop(col, None)
            self._tables[key] = cols
        return self._tables[key]

    def machine_of(self, point: PointResult) -> PointMachine:
        """The point's own machine (a sweep over the machine runs several)."""
        if not self.machines:
            self.machines = point_machines(self.result, str(self.path / "results.json"))
        return self.machines[point.index]

    @property
    def machine_title(self) -> str:
        """``NAME (kind, R routers, N nodes)`` of the run's first point, for figure titles
        (:func:`~federation.plots.data.figure_title` names each point's own)."""
        return self.machine_of(self.result.points[0]).title

    def check_tables(self) -> None:
        """Read and check every table the figures use, so that a bad one is refused before
        anything is drawn or written."""
        for p in self.result.points:
            for name in TABLE_COLUMNS:
                if name in p.files:
                    self.table(p, name)


# ------------------------------------------------------------------------- the folder
def load_folder(path: str | Path, tables: bool = True) -> ResultFolder:
    """Read and check a result folder (and, with ``tables``, every table of it); a bad one is
    a :class:`ConfigError` naming the file and the field."""
    p = Path(path)
    if not p.exists():
        raise ConfigError("no such folder", source=str(p))
    if not p.is_dir():
        raise ConfigError("not a folder (expected a run's output folder holding results.json)",
                          source=str(p))
    doc_path = p / "results.json"
    if not doc_path.is_file():
        if doc_path.exists() or doc_path.is_symlink():
            raise ConfigError("results.json is not a regular file (a results folder holds "
                              "its results document as a file)", source=str(p))
        raise ConfigError("not a results folder: it holds no results.json", source=str(p))
    _inside(p, "results.json", str(doc_path), "")
    result = _read_results(p, doc_path)
    for i, pt in enumerate(result.points):
        for name, f in pt.files.items():
            check_file_entry(p, f, name, str(doc_path), f"points[{i}].files.{name}")
    machines = point_machines(result, str(doc_path))
    for i, pt in enumerate(result.points):
        check_loads(pt, machines[pt.index], str(doc_path), f"points[{i}]")
        check_busiest_links(pt, machines[pt.index], str(doc_path), f"points[{i}]")
    folder = ResultFolder(p, result, performance=_read_performance(p, len(result.points)),
                          machines=machines)
    if tables:
        folder.check_tables()
    return folder


def load_folders(paths: list[Path]) -> list[ResultFolder]:
    """Several folders, each labelled by the shortest distinct name (folder name, else path);
    a folder given twice (``plot out out``, ``out ./out``) is refused: it drew every series
    twice."""
    seen: set[Path] = set()
    for p in paths:
        real = Path(p).resolve()
        if real in seen:
            raise ConfigError("this results folder is given twice; give each folder once",
                              source=str(p))
        seen.add(real)
    folders = [load_folder(p) for p in paths]
    names = [f.path.name or str(f.path) for f in folders]
    if len(set(names)) < len(names):
        names = [str(f.path) for f in folders]
    for f, n in zip(folders, names, strict=True):
        f.label = n
    return folders


def _read_results(folder: Path, doc_path: Path) -> RunResult:
    source = str(doc_path)
    try:
        doc = read_document(doc_path)
    except ConfigError as exc:
        raise ConfigError(f"cannot read results.json: {exc.message}", source=str(folder)) \
            from None
    if doc.get("schema_name") != "hpc-federation.results":
        raise ConfigError("results.json is not an hpc-federation results document "
                          "(schema_name is not 'hpc-federation.results')", source=str(folder))
    version = doc.get("schema_version")
    if version != RESULTS_SCHEMA_VERSION:
        raise ConfigError(f"results.json has schema_version {version!r}; this version of "
                          f"federation reads {RESULTS_SCHEMA_VERSION} (rerun the experiment: "
                          "its resolved document is in results.json)", source=str(folder))
    bad = non_finite(doc)
    if bad is not None:
        raise ConfigError(f"{bad[1]!r} is not a finite number", source=source, path=bad[0])
    from pydantic import ValidationError

    try:
        result = RunResult.model_validate(doc, strict=True)
    except ValidationError as exc:
        raise validation_error(exc, source) from None
    _check_run(result, source)
    return result


def _negative(x: Any, path: str) -> tuple[str, float] | None:
    """The first negative number under ``x`` (bools are not numbers here)."""
    return first_number(x, path, lambda v: v < 0)


def _check_run(r: RunResult, source: str) -> None:
    """What the model cannot say: indices once each, counts and summary figures not negative,
    loads numbers, and ``status`` / ``missing_points`` agreeing with the points."""
    if not r.points:
        raise ConfigError("holds no finished point", source=source, path="points")
    m = r.machine
    for name, v in (("routers", m.routers), ("nodes", m.nodes), *(
            (f"links.{k}", n) for k, n in m.links.items())):
        if v < 0:
            raise ConfigError(f"{v} is negative", source=source, path=f"machine.{name}")
    seen: dict[int, int] = {}
    for i, p in enumerate(r.points):
        where = f"points[{i}]"
        if p.index < 0 or p.index in seen:
            why = "is negative" if p.index < 0 else f"is also points[{seen[p.index]}]'s index"
            raise ConfigError(f"{p.index} {why}: each point of a sweep appears once, by its "
                              "position", source=source, path=f"{where}.index")
        seen[p.index] = i
        neg = _negative(p.summary.model_dump(mode="json"), f"{where}.summary")
        if neg is not None:
            raise ConfigError(f"{neg[1]!r} is negative; a summary figure is a count, load, "
                              "time or fraction", source=source, path=neg[0])
        load = p.sweep.get(LOAD_KEY)
        if LOAD_KEY in p.sweep and (isinstance(load, bool) or not isinstance(load, (int, float))
                                    or load < 0):
            raise ConfigError(f"{load!r} is not a load (a number >= 0)", source=source,
                              path=f"{where}.sweep.{LOAD_KEY}")
    missing: set[int] = set()
    for j, k in enumerate(r.missing_points):
        if k < 0 or k in missing or k in seen:
            why = ("is negative" if k < 0 else "is listed twice" if k in missing
                   else f"is a finished point (points[{seen[k]}])")
            raise ConfigError(f"{k} {why}", source=source, path=f"missing_points[{j}]")
        missing.add(k)
    if r.status == "complete" and missing:
        raise ConfigError(f"the run says it is complete but lists missing points "
                          f"{sorted(missing)}", source=source, path="status")
    check_document(r, source)
    check_repeated_loads(r, source)


def _inside(folder: Path, entry: str, source: str, path: str) -> Path:
    """``folder / entry`` if it is a regular file that stays inside ``folder`` once symbolic
    links are followed; else a :class:`ConfigError` (``source``, ``path``: where it is named)."""
    try:
        target = (folder / entry).resolve()
        root = folder.resolve()
        ok = target.is_file()
    except (OSError, ValueError, RuntimeError) as exc:  # a name too long, a NUL, a lone
        # surrogate, or (RuntimeError, before Python 3.13) a symbolic link to itself
        raise ConfigError(f"{entry!r} cannot be opened: {exc}", source=source or str(folder),
                          path=path or None) from None
    if not target.is_relative_to(root):
        raise ConfigError(f"{entry!r} leads outside the results folder (to {target}); a "
                          "results folder names only its own files", source=source,
                          path=path or None)
    if not ok:
        raise ConfigError(f"{entry!r} is not a file in the results folder", source=source,
                          path=path or None)
    return target


def check_file_entry(folder: Path, entry: str, name: str, source: str, path: str) -> Path:
    """A ``files`` entry as a path inside ``folder``: relative, of plain names (no ``.``,
    ``..``, empty part or backslash), a regular file that stays inside once links are followed;
    a table's name ends in ``.parquet`` or ``.csv``."""
    parts = entry.split("/")
    if (not entry or entry.startswith("/") or "\\" in entry or "\0" in entry
            or any(part in ("", ".", "..") for part in parts)):
        raise ConfigError(f"{entry!r} is not a file name inside the results folder (a "
                          "relative path of plain names: no '..', no leading '/')",
                          source=source, path=path)
    if name in TABLE_COLUMNS and not entry.endswith(TABLE_SUFFIXES):
        raise ConfigError(f"{entry!r} is not a table file (.parquet or .csv)", source=source,
                          path=path)
    return _inside(folder, entry, source, path)


def _read_performance(folder: Path, n_points: int) -> list[dict[str, float] | None]:
    """``performance.json`` (optional): one entry per point, each ``null`` or a mapping of
    finite non-negative wall-clock figures; a malformed one is refused (the report shows it)."""
    p = folder / "performance.json"
    if not (p.exists() or p.is_symlink()):
        return []
    source = str(p)
    _inside(folder, "performance.json", source, "")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read: {exc}", source=source) from None
    if not isinstance(doc, list) or len(doc) != n_points:
        raise ConfigError(f"expected a list of {n_points} entries (one per point of "
                          "results.json)", source=source)
    for i, entry in enumerate(doc):
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise ConfigError("expected a mapping or null", source=source, path=f"[{i}]")
        for k, v in entry.items():
            if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                    or v < 0):
                raise ConfigError(f"{v!r} is not a finite number >= 0", source=source,
                                  path=f"[{i}].{k}")
    return doc


# ------------------------------------------------------------------------- the tables
def _with_optional(want: dict[str, str], names: list[str], name: str) -> dict[str, str]:
    return {**want, **{c: k for c, k in OPTIONAL_COLUMNS.get(name, {}).items() if c in names}}


def read_table(path: Path, name: str) -> dict[str, np.ndarray]:
    """The columns of :data:`TABLE_COLUMNS` ``[name]`` of a Parquet or CSV table, checked for
    presence, type and empty cells (columns the figures do not read are not loaded)."""
    import pyarrow as pa

    want = TABLE_COLUMNS[name]
    source = str(path)
    try:
        with _opened(path) as f:
            if path.suffix == ".csv":
                import pyarrow.csv as pcsv

                threads = pcsv.ReadOptions(use_threads=isinstance(f, str))
                with pcsv.open_csv(f, read_options=threads) as reader:
                    names = reader.schema.names
                _check_names(names, want, name, source)
                want = _with_optional(want, names, name)
                # only an empty cell is missing: "nan" is read as the number it is
                # (refused as NaN where a figure is read), "NA" as the string it is
                table = pcsv.read_csv(_rewound(f), read_options=threads,
                                      convert_options=pcsv.ConvertOptions(
                                          include_columns=list(want), null_values=[""],
                                          column_types=_text_columns(want)))
            else:
                import pyarrow.parquet as pq

                names = pq.read_schema(f).names
                _check_names(names, want, name, source)
                want = _with_optional(want, names, name)
                table = pq.read_table(_rewound(f), columns=list(want),
                                      use_threads=isinstance(f, str),
                                      pre_buffer=isinstance(f, str))
    except (OSError, ValueError, TypeError, NotImplementedError, pa.ArrowException) as exc:
        raise ConfigError(f"cannot read the {name} table: {exc}", source=source) from None
    out = {}
    for col, kind in want.items():
        c = table.column(col)
        if c.null_count:
            raise ConfigError(f"{c.null_count} empty cell(s); every row of a {name} table has "
                              "a value", source=source, path=col)
        if table.num_rows == 0:  # an empty table's columns are written untyped
            out[col] = np.zeros(0, dtype=_NUMPY[kind])
            continue
        if not _is_kind(c.type, kind):
            raise ConfigError(f"column of type {c.type}, expected {_KIND_NAMES[kind]}",
                              source=source, path=col)
        out[col] = c.to_numpy(zero_copy_only=False).astype(_NUMPY[kind], copy=False)
    return out


def _text_columns(want: dict[str, str]) -> dict[str, Any]:
    """The columns of ``want`` declared text, typed as strings for pyarrow's CSV reader.

    A CSV cell carries no type: left to infer, pyarrow reads a job named ``"10"`` or
    ``"true"``, or a link class named ``"10"``, as an integer or a boolean (the writer's quotes
    do not stop it), and the column is refused as not text although its Parquet twin reads
    fine.  Declared text, it is read as written.  Text cells are never missing: an empty one
    is the empty string, as the writer writes it (the ``job`` of rows no single job owns)."""
    import pyarrow as pa

    return {col: pa.string() for col, kind in want.items() if kind == "str"}


@contextmanager
def _opened(path: Path) -> Iterator[Any]:
    """``path`` as pyarrow should open it: its name, or, when the name is not UTF-8 (Python
    keeps such bytes as surrogates, which pyarrow cannot encode), a file Python opened.  Such a
    file is read on the calling thread only: pyarrow's threads calling back into Python may
    abort the process at exit."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        with open(path, "rb") as f:
            yield f
        return
    yield str(path)


def _rewound(f: Any) -> Any:
    if not isinstance(f, str):
        f.seek(0)
    return f


_KIND_NAMES = {"int": "integers", "number": "numbers", "bool": "booleans", "str": "strings"}


def _is_kind(t: Any, kind: str) -> bool:
    import pyarrow.types as pt

    # uint64 is left out: its values above 2^63 - 1 would wrap as int64
    if kind == "int":
        return bool(pt.is_integer(t) and not pt.is_uint64(t))
    if kind == "number":
        return bool(pt.is_integer(t) or pt.is_floating(t))
    if kind == "bool":
        return bool(pt.is_boolean(t))
    return bool(pt.is_string(t) or pt.is_large_string(t))


def _check_names(names: list[str], want: dict[str, str], name: str, source: str) -> None:
    for col in want:
        if col not in names:
            raise ConfigError(f"missing column (a {name} table has {', '.join(want)})",
                              source=source, path=col)
        if names.count(col) > 1:
            raise ConfigError("column given twice", source=source, path=col)


def check_table(cols: dict[str, np.ndarray], name: str, point: PointResult,
                machine: PointMachine, source: str, results: str = "") -> None:
    """Values in range, and the table belonging to ``point`` (see the module docstring);
    ``machine``: the point's own; ``results``: the folder's ``results.json``, where the
    machine is rebuilt from to check the ports' wiring (by default beside the table)."""
    results = results or str(Path(source).parent / "results.json")

    def refuse(col: str, msg: str) -> ConfigError:
        return ConfigError(msg, source=source, path=col)

    bad = cols["point"] != point.index
    if bad.any():
        raise refuse("point", f"holds point {int(cols['point'][bad][0])}, but results.json "
                     f"names this file for point {point.index}: a table of another point or run")
    s = point.summary
    if name == "packets":
        m = cols["measured"]
        created, delivered, hops = cols["created_ps"][m], cols["delivered_ps"][m], cols["hops"][m]
        if (created < 0).any() or (delivered < created).any():
            raise refuse("delivered_ps", "a measured packet delivered before it was created")
        routers = machine.routers
        limit = hop_limit(routers)
        if ((hops < 0) | (hops > limit)).any():
            raise refuse("hops", f"a measured packet with hops outside 0..{limit} (the engine's "
                         f"hop limit for {routers} routers)")
        # rank programs' packets: tables written before they were listed lack their rows
        if s.programs is None:
            if int(m.sum()) != s.packets_measured:
                raise refuse("measured", f"{int(m.sum())} measured packets, but the point's "
                             f"summary counts {s.packets_measured}: not this point's table")
            for col, values, want in (("delivered_ps", (delivered - created) / 1e3,
                                       s.latency_ns.mean), ("hops", hops, s.mean_hops)):
                _agree(values, want, "mean", refuse(col, ""))
    elif name == "ports":
        check_ports(cols, point, machine, refuse, results)
    elif name == "link_series":
        check_link_series(cols, point, machine, refuse, results)
    else:
        done = cols["measured"] & (cols["completed_ps"] >= 0)
        c = cols["completion_ps"][done]
        if (c < 0).any():
            raise refuse("completion_ps", "a completed message with a negative completion time")
        if s.programs is None:
            _agree(c / 1e3, s.message_completion_ns_mean, "mean completion",
                   refuse("completion_ps", ""))
        elif "background" in cols:  # the programs' completed messages: the summary's sample
            mine = cols["completion_ps"][done & ~cols["background"].astype(bool)] / 1e3
            v = s.programs.message_completion_ns
            n, top = (v.samples, v.max) if v is not None else (0, None)
            if mine.size != n or (n and not math.isclose(float(mine.max()), float(top),
                                                         rel_tol=1e-9, abs_tol=1e-9)):
                got = f"{mine.size} (max {float(mine.max()):g} ns)" if mine.size else "0"
                raise refuse("completion_ps", f"the programs' completed messages are {got}, "
                             f"but the point's summary counts {n}"
                             + (f" (max {float(top):g} ns)" if n else "")
                             + ": not this point's table")


def _agree(values: np.ndarray, want: float | None, what: str, error: ConfigError) -> None:
    """Raise ``error`` (its message filled in) unless the mean of ``values`` is the summary's
    ``want`` (both absent when there are no values)."""
    mean = float(values.mean()) if values.size else None
    if (mean is None) != (want is None) or (
            mean is not None and want is not None
            and not math.isclose(mean, want, rel_tol=1e-9, abs_tol=1e-9)):
        raise ConfigError(f"{what} of the measured rows {mean}, but the point's summary says "
                          f"{want}: not this point's table", source=error.source,
                          path=error.path)
