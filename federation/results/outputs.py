"""Everything a command writes goes through here: output folders (:class:`OutputDir`: ``run``,
``sst run``, ``sst generate``), single output files (:class:`OutputFile`: ``crossval --out``,
``report``, ``schema --out``, ``export``, ``comm --plot``) and files added to a folder
(:class:`OutputFiles`: ``plot --out``).  One mechanism, so that no writer loses results or writes
somewhere it should not.

**Before any time is spent** the destination is checked and refused with one message naming the
option or field (:func:`check_out_path`, :func:`check_name`): every component of the path at most
255 bytes (``NAME_MAX`` of the common file systems), valid UTF-8 (``plot``, ``report`` and
``results.json`` need text names), no NUL byte; an experiment ``name`` used as a folder name is
one plain component (no ``/``, not ``.`` or ``..``).  What an existing destination is, is found
with ``lstat`` only (``open`` blocks on a FIFO): anything but a regular file (a file output) or
a folder (a folder output) is refused, a link too (:mod:`federation.results.destinations` says
why), and an output that would replace one of the command's inputs is refused
(:func:`check_not_input`).  An existing destination is replaced only
with ``--overwrite``, and a folder only when it is ours: empty, holding a ``results.json`` of
this tool's schema, or only files this tool writes (tables, ``config-N.py``).  Then the
temporary folder (or file) is created beside the destination, proving it creatable and
writable, and an existing folder to be replaced is renamed away and back, proving it
replaceable (a read-only or immutable place fails here, not after the run).

**During a run** each point's tables are written into the temporary folder as soon as the point
finishes (memory stays flat in the number of points).  A file that cannot be written (disk full,
a quota) raises :class:`OutputError` naming it.

**At the end** :meth:`OutputDir.finish` counts what it writes: a point whose tables are not all
in the folder is moved to ``missing_points``, and ``status`` is ``complete`` only when no point
is missing.  The folder then replaces the destination whole (a rename; the old folder is moved
aside first and removed after), with stop signals held (:mod:`federation.interrupts`) so that
the swap is never left half-way.  An incomplete run never replaces a complete earlier one: it is
written beside it, as ``<out>.incomplete-<n>`` (the lowest free ``n``), and the caller says
where.  A run that fails before any point finished leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self

import numpy as np

from federation.errors import ConfigError, OutputError, os_reason
from federation.interrupts import held
from federation.results.destinations import (
    NAME_MAX,
    OUR_FILES,
    check_name,
    check_not_input,
    check_out_file,
    check_out_folder,
    check_out_path,
    link_refusal,
    lstat_out,
    not_a_folder,
    not_regular,
)
from federation.results.model import RunResult
from federation.results.spool import Table

_RESULTS_SCHEMA = "hpc-federation.results"

#: re-exported: the name checks and the input check live in destinations
__all__ = ["NAME_MAX", "OutputDir", "OutputError", "OutputFile", "OutputFiles", "check_name",
           "check_not_input", "check_out_file", "check_out_folder", "check_out_path",
           "is_ours", "results_status", "write_file", "write_table"]


# ---------------------------------------------------------------------- what a folder holds
def results_status(folder: Path) -> str | None:
    """``complete`` or ``incomplete`` when ``folder`` holds a ``results.json`` of this tool,
    else ``None``.  Only a regular file is read: a FIFO would block the open, a device
    never ends."""
    doc_path = folder / "results.json"
    try:
        if not stat.S_ISREG(os.lstat(doc_path).st_mode):
            return None
        doc = json.loads(doc_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema_name") != _RESULTS_SCHEMA:
        return None
    return "incomplete" if doc.get("status") == "incomplete" else "complete"


def is_ours(folder: Path) -> bool:
    """May ``--overwrite`` replace ``folder``: empty, a results folder of this tool, or only
    files this tool writes?"""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return False
    if not entries or results_status(folder) is not None:
        return True
    return all(e.is_file() and not e.is_symlink() and OUR_FILES.fullmatch(e.name)
               for e in entries)


def _beside(out: Path, tag: str) -> Path:
    """The first free ``<out>.<tag>-<n>``, its name cut to fit :data:`NAME_MAX`."""
    n = 1
    while True:
        suffix = f".{tag}-{n}"
        stem = out.name
        while len(os.fsencode(stem + suffix)) > NAME_MAX:
            stem = stem[:-1]
        cand = out.with_name(stem + suffix)
        if not (cand.exists() or cand.is_symlink()):
            return cand
        n += 1


def _fresh(parent: Path, prefix: str) -> Path:
    """An unused name in ``parent`` (not created)."""
    return parent / f"{prefix}{secrets.token_hex(4)}"


# ---------------------------------------------------------------------- output folders
class _Made:
    """What every writer here shares: the folders it made for its destination
    (``_created``, deepest first), removed again when it is abandoned (:meth:`abort`, also on
    leaving a ``with`` block by an exception), as far as they are still empty."""

    _created: list[Path]

    def abort(self) -> None:
        raise NotImplementedError

    def _remove_created(self) -> None:
        for q in self._created:
            try:
                q.rmdir()
            except OSError:
                break

    def __enter__(self) -> Self:
        return self

    def __exit__(self, typ: object, exc: object, tb: object) -> None:
        if exc is not None:
            self.abort()


class OutputDir(_Made):
    """A run's output folder (see the module docstring).  ``final`` is where it went."""

    def __init__(self, out: Path, fmt: str, overwrite: bool = False,
                 source: str = "--out") -> None:
        self.out = Path(out)
        self.fmt = fmt
        self.overwrite = overwrite
        self.source = source
        self.final: Path | None = None
        self.beside_complete = False  # final is beside a complete earlier run, not in place
        self._created: list[Path] = []
        self.tmp = self._prepare()

    # ------------------------------------------------------------------ before the run
    def _prepare(self) -> Path:
        out = self.out
        check_out_path(out, self.source)
        st = lstat_out(out, self.source)
        if st is not None:
            if stat.S_ISLNK(st.st_mode):  # replaced whole: a link is not ours to replace
                raise link_refusal(out, self.source)
            if not stat.S_ISDIR(st.st_mode):
                raise ConfigError(not_a_folder(out, st.st_mode), source=self.source)
            self._check_replaceable()
        parent = out.absolute().parent
        try:
            missing = []
            p = parent
            while not p.exists():
                missing.append(p)
                p = p.parent
            if not p.is_dir():
                raise ConfigError(f"cannot write the output folder {out}: {p} is a file, not a "
                                  "folder", source=self.source)
            parent.mkdir(parents=True, exist_ok=True)
            self._created = missing  # deepest first
            tmp = _fresh(parent, ".federation-")
            tmp.mkdir(0o777)  # the umask decides, as for a folder made by mkdir
            return tmp
        except OSError as exc:
            self._remove_created()
            raise ConfigError(f"cannot write the output folder {out}: {os_reason(exc)}",
                              source=self.source) from None

    def _check_replaceable(self) -> None:
        out = self.out
        try:
            empty = not any(out.iterdir())
        except OSError as exc:
            raise ConfigError(f"cannot read the output folder {out}: {os_reason(exc)}",
                              source=self.source) from None
        if not empty and not self.overwrite:
            raise ConfigError(
                f"{out} exists and is not empty; choose another folder or pass --overwrite "
                "to replace it whole", source=self.source)
        if not empty and not is_ours(out):
            raise ConfigError(
                f"{out} is not a results folder (no results.json of {_RESULTS_SCHEMA}, and "
                "files federation does not write); --overwrite replaces only an empty folder "
                "or one federation wrote: choose another folder", source=self.source)
        probe = _fresh(out.absolute().parent, ".federation-probe-")
        with held():  # renamed away and back: proves the swap at the end will work
            try:
                out.rename(probe)
            except OSError as exc:
                raise ConfigError(f"cannot replace {out}: {os_reason(exc)}",
                                  source=self.source) from None
            probe.rename(out)


    # ------------------------------------------------------------------ during the run
    def write_table(self, name: str, table: dict[str, np.ndarray], extra: dict[str, Any]) -> str:
        """Write one table now; returns its file name inside the output folder."""
        return write_table(table, self.tmp / name, self.fmt, extra).name

    # ------------------------------------------------------------------ at the end
    def finish(self, result: RunResult, performance: list[dict[str, Any] | None]) -> RunResult:
        """Count what is in the folder, write the documents and swap the folder into place
        (beside a complete earlier run when this one is incomplete); returns the result as
        written.  Raises :class:`OutputError` when a document cannot be written (the tables
        are kept, in place, without it) or the folder cannot be moved (it stays where it is,
        and the message says where)."""
        result, kept = self._counted(result)
        performance = [performance[k] for k in kept]
        with held():
            failure = self._write_documents(result, performance)
            dest = self._destination("incomplete" if failure else result.status)
            self._swap(dest)
            self.final = dest
        if failure is not None:
            raise OutputError(f"{failure}; the tables of the {len(result.points)} finished "
                              f"points are kept in {dest}, without results.json")
        return result

    def place(self) -> Path:
        """Put a folder that holds no run (``federation sst config``'s configurations) in place,
        whole, replacing ``out`` as :meth:`finish` would (the same checks were made when the
        folder was prepared)."""
        with held():
            self._swap(self.out)
            self.final = self.out
        return self.out

    def _counted(self, result: RunResult) -> tuple[RunResult, list[int]]:
        """The result without the points whose tables are not all in the folder (listed as
        missing instead; results.json never claims a point it does not have), and the
        positions of the points kept."""
        kept = [k for k, p in enumerate(result.points)
                if all((self.tmp / f).is_file() for f in p.files.values())]
        if len(kept) == len(result.points):
            return result, kept
        lost = [p.index for k, p in enumerate(result.points) if k not in kept]
        note = f"the tables of points {lost} were not written"
        return result.model_copy(update={
            "points": [result.points[k] for k in kept], "status": "incomplete",
            "missing_points": sorted({*result.missing_points, *lost}),
            "error": f"{result.error}; {note}" if result.error else note}), kept

    def _write_documents(self, result: RunResult,
                         performance: list[dict[str, Any] | None]) -> str | None:
        """``results.json`` and ``performance.json`` into the folder; the failure, if any."""
        docs = {"results.json": json.dumps(result.model_dump(mode="json"), indent=2,
                                           sort_keys=True) + "\n",
                "performance.json": json.dumps(performance, indent=2) + "\n"}
        for name, text in docs.items():
            try:
                (self.tmp / name).write_text(text, encoding="utf-8")
            except OSError as exc:
                for n in docs:
                    (self.tmp / n).unlink(missing_ok=True)
                return f"cannot write {self.out / name}: {os_reason(exc)}"
        return None

    def _destination(self, status: str) -> Path:
        out = self.out
        if not (out.exists() or out.is_symlink()):
            return out
        if out.is_dir() and not out.is_symlink():
            if not any(out.iterdir()):
                return out
            if self.overwrite and is_ours(out):
                if status == "complete" or results_status(out) != "complete":
                    return out
                self.beside_complete = True
        # an incomplete run beside a complete one; or the folder appeared during the run
        return _beside(out, "incomplete" if status != "complete" else "new")

    def _swap(self, dest: Path) -> None:
        old = None
        try:
            if dest.exists() and any(dest.iterdir()):
                old = _fresh(self.tmp.parent, ".federation-old-")
                dest.rename(old)
            self.tmp.rename(dest)
        except OSError as exc:
            if old is not None and not dest.exists():
                old.rename(dest)
            raise OutputError(f"cannot move the results into {dest}: {os_reason(exc)}; "
                              f"they are in {self.tmp}") from None
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        """Remove everything this run created (nothing finished worth keeping)."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._remove_created()


# ---------------------------------------------------------------------- output files
class OutputFile(_Made):
    """One output file written whole at the end (``crossval --out``, ``report``, ``schema``).

    Checked when made, with ``lstat`` only (never ``open``, which blocks on a FIFO): the path
    (:func:`check_out_path`; a name ending in ``/`` names a folder), never a folder, a link, a
    device, a FIFO or a socket (federation replaces only a regular file it could have
    written), an existing file only with ``overwrite`` (and, with ``ours``, only a file
    ``ours`` accepts); then a temporary file is created beside it, proving the place
    writable, and an existing file is opened for appending (non-blocking, links not followed,
    nothing written), proving it replaceable.  Missing folders above it are made (and removed
    again if it is not written), as every command's output file had asked for.  :meth:`commit`
    writes the text into the temporary file and renames it over the destination;
    :meth:`abort` (or leaving a ``with`` block by an exception) removes it."""

    def __init__(self, path: str | Path, *, source: str, overwrite: bool = False,
                 ours: Callable[[Path], bool] | None = None, what: str = "file") -> None:
        self.path = Path(path)
        self.source = source
        p = self.path
        st = check_out_file(path, source, overwrite)
        if st is not None and ours is not None and not ours(p):  # a regular file: no FIFO
            raise ConfigError(f"{p} is not a {what}; --overwrite replaces only a {what}: "
                              "choose another file", source=source)
        parent = p.absolute().parent
        self._created: list[Path] = []
        try:
            if not parent.is_dir():
                if parent.exists():
                    raise ConfigError(f"cannot write {p}: {parent} is not a folder",
                                      source=source)
                q = parent
                while not q.exists():
                    self._created.append(q)
                    q = q.parent
                parent.mkdir(parents=True)
            if st is not None:
                self._probe(p)
            self.tmp = _fresh(parent, ".federation-")
            os.close(os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except BaseException as exc:
            self._remove_created()
            if isinstance(exc, OSError):
                raise ConfigError(f"cannot write {p}: {os_reason(exc)}",
                                  source=source) from None
            raise

    def _probe(self, p: Path) -> None:
        """Open the existing regular file for appending (proves it replaceable: an immutable
        one fails here); non-blocking and not through a link, and checked again once open,
        should it have been swapped for something else since the ``lstat``."""
        flags = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | flags)
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        if not stat.S_ISREG(mode):
            raise not_regular(p, mode, self.source)

    def commit(self, text: str | bytes) -> None:
        """Write ``text`` (or bytes: a figure) and put the file in place (``OutputError``
        naming it on failure)."""
        with held():
            try:
                if isinstance(text, bytes):
                    self.tmp.write_bytes(text)
                else:
                    self.tmp.write_text(text, encoding="utf-8")
                st = lstat_out(self.path, self.source)  # what it is now, just before the rename
                if st is not None and not stat.S_ISREG(st.st_mode):
                    raise (ConfigError(f"{self.path} is a folder; give a file name",
                                       source=self.source) if stat.S_ISDIR(st.st_mode)
                           else not_regular(self.path, st.st_mode, self.source))
                os.replace(self.tmp, self.path)
            except OSError as exc:
                self.abort()
                raise OutputError(f"cannot write {self.path}: {os_reason(exc)}") from None
            except ConfigError:
                self.abort()
                raise

    def abort(self) -> None:
        self.tmp.unlink(missing_ok=True)
        self._remove_created()



class OutputFiles(_Made):
    """Files made together into one folder, beside what it holds (``plot --out``): a user's
    folder is never replaced whole, and a file of the same name only with ``overwrite``.

    Checked when made (the caller has checked the path with :func:`check_out_path`, before
    reading its inputs): a folder (made with its parents when missing), and a temporary
    folder created in it, proving it writable.  The files are
    made in :attr:`tmp`; :meth:`commit` refuses, before any is moved, when one of their names
    is taken (without ``overwrite``; by anything but a regular file always: a folder, a link,
    a device, a FIFO), then moves them in;
    :meth:`abort` (or leaving a ``with`` block by an exception) removes the temporary folder
    and the folders made for it, so a refusal leaves nothing behind."""

    def __init__(self, out: Path, *, source: str, overwrite: bool = False,
                 what: str = "files") -> None:
        self.out = Path(out)
        self.source = source
        self.overwrite = overwrite
        self.what = what
        check_out_folder(self.out, source)
        self._created: list[Path] = []
        q = self.out.absolute()
        while not (q.exists() or q.is_symlink()):
            self._created.append(q)
            q = q.parent
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self.tmp = _fresh(self.out, ".federation-")
            self.tmp.mkdir()
        except OSError as exc:
            self._remove_created()
            raise ConfigError(f"cannot write {self.out}: {os_reason(exc)}",
                              source=source) from None

    def commit(self) -> list[Path]:
        """Move every file made in :attr:`tmp` into the folder; returns their new paths."""
        names = sorted(p.name for p in self.tmp.iterdir())
        modes = {n: st.st_mode for n in names
                 if (st := lstat_out(self.out / n, self.source)) is not None}
        taken = [self.out / n for n in modes]
        odd = next((n for n, m in modes.items() if not stat.S_ISREG(m)), None)
        if odd is not None or (taken and not self.overwrite):
            self.abort()
            if odd is not None and stat.S_ISDIR(modes[odd]):
                raise ConfigError(f"{self.out / odd} is a folder; choose another folder for "
                                  f"the {self.what}", source=self.source)
            if odd is not None:  # a link, a device, a FIFO: never replaced
                raise not_regular(self.out / odd, modes[odd], self.source,
                                  f"choose another folder for the {self.what}")
            more = (f" ({len(taken)} of the {len(names)} {self.what} are there already)"
                    if len(taken) > 1 else "")
            raise ConfigError(f"{taken[0]} exists{more}; choose another folder or pass "
                              "--overwrite", source=self.source)
        with held():
            for n in names:
                try:
                    os.replace(self.tmp / n, self.out / n)
                except OSError as exc:
                    self.abort()
                    raise OutputError(f"cannot write {self.out / n}: {os_reason(exc)}") from None
            self.tmp.rmdir()
        return [self.out / n for n in names]

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._remove_created()



def write_file(path: Path, text: str, source: str) -> None:
    """Write one file whole now, replacing an existing one (``schema --out``, which
    regenerates its files): the same checks and rename as :class:`OutputFile`."""
    OutputFile(path, source=source, overwrite=True).commit(text)


# ---------------------------------------------------------------------- tables
def write_table(table: Mapping[str, np.ndarray], path: Path, fmt: str,
                extra: dict[str, Any]) -> Path:
    """One table as Parquet or CSV; ``extra`` adds constant columns (e.g. the point index).

    A :class:`~federation.results.spool.Table` is written a chunk at a time (a Parquet row group or
    a run of CSV lines each), so a table of 10^8 packets never sits in memory.  A file that
    cannot be written raises :class:`OutputError` naming it (pyarrow's own error is a
    traceback's worth of C++ detail)."""
    out = path.with_suffix(".csv" if fmt == "csv" else ".parquet")
    try:
        _write_table(table, out, fmt, extra)
    except OSError as exc:
        out.unlink(missing_ok=True)
        raise OutputError(f"cannot write the table {out.name}: {os_reason(exc)}") from None
    return out


def _write_table(table: Mapping[str, np.ndarray], out: Path, fmt: str,
                 extra: dict[str, Any]) -> None:
    import pyarrow as pa

    def arrow(cols: Mapping[str, np.ndarray]) -> pa.Table:
        res = {k: pa.array(v) for k, v in cols.items()}
        n = len(next(iter(cols.values()))) if cols else 0
        for k, v in extra.items():
            res[k] = pa.array([v] * n)
        return pa.table(res)

    parts = table.chunks() if isinstance(table, Table) else iter([table])
    first = next(parts, None)
    if first is None:  # a table without rows: its columns, empty
        first = {k: np.zeros(0, dtype=np.int64) for k in table}
    head = arrow(first)
    if fmt == "csv":
        import pyarrow.csv as pcsv

        with pcsv.CSVWriter(out, head.schema) as w:
            w.write_table(head)
            for cols in parts:
                w.write_table(arrow(cols).cast(head.schema))
    else:
        import pyarrow.parquet as pq

        with pq.ParquetWriter(out, head.schema) as w:
            w.write_table(head)
            for cols in parts:
                w.write_table(arrow(cols).cast(head.schema))
