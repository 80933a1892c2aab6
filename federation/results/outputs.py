"""The output folder of a run: checked before simulating, filled point by point, swapped in whole.

* **Before the run** the folder is checked: an existing non-empty folder is refused unless
  ``overwrite`` is set (old per-point tables beside a new ``results.json`` would be read as
  results of this run), and a temporary folder is created beside it, which proves the location
  is creatable and writable before any time is spent simulating.
* **During the run** each point's tables are written into the temporary folder as soon as the
  point finishes, so memory stays flat in the number of points.
* **At the end** ``results.json`` and ``performance.json`` are written and the temporary folder
  replaces the output folder (a rename; an overwritten folder is moved aside first and removed
  after).  A run that fails or is interrupted after some points finished keeps them, with
  ``results.json`` marked ``incomplete`` and listing the missing points; a run that fails before
  any point finished leaves nothing behind.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from federation.errors import ConfigError
from federation.results.model import RunResult
from federation.results.spool import Table


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class OutputDir:
    """A run's output folder (see the module docstring)."""

    def __init__(self, out: Path, fmt: str, overwrite: bool = False,
                 source: str = "--out") -> None:
        self.out = Path(out)
        self.fmt = fmt
        self.overwrite = overwrite
        self.source = source
        self._created: list[Path] = []
        self.tmp = self._prepare()

    # ------------------------------------------------------------------ before the run
    def _prepare(self) -> Path:
        out = self.out
        if out.exists() or out.is_symlink():
            if not out.is_dir():
                raise ConfigError(f"{out} exists and is not a folder", source=self.source)
            if any(out.iterdir()) and not self.overwrite:
                raise ConfigError(
                    f"{out} exists and is not empty; choose another folder or pass --overwrite "
                    "to replace it whole", source=self.source)
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
            return Path(tempfile.mkdtemp(prefix=".federation-", dir=parent))
        except OSError as exc:
            self._remove_created()
            raise ConfigError(f"cannot write the output folder {out}: {_os_reason(exc)}",
                              source=self.source) from None

    def _remove_created(self) -> None:
        for p in self._created:
            try:
                p.rmdir()
            except OSError:
                break

    # ------------------------------------------------------------------ during the run
    def write_table(self, name: str, table: dict[str, np.ndarray], extra: dict[str, Any]) -> str:
        """Write one table now; returns its file name inside the output folder."""
        return write_table(table, self.tmp / name, self.fmt, extra).name

    # ------------------------------------------------------------------ at the end
    def finish(self, result: RunResult, performance: list[dict[str, Any] | None]) -> None:
        """Write the documents and swap the folder into place."""
        (self.tmp / "results.json").write_text(
            json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        (self.tmp / "performance.json").write_text(json.dumps(performance, indent=2) + "\n")
        out = self.out
        trash = None
        if out.exists():
            trash = Path(tempfile.mkdtemp(prefix=".federation-old-", dir=self.tmp.parent))
            out.rename(trash / "old")
        self.tmp.rename(out)
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)

    def abort(self) -> None:
        """Remove everything this run created (nothing finished worth keeping)."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._remove_created()


def write_table(table: Mapping[str, np.ndarray], path: Path, fmt: str,
                extra: dict[str, Any]) -> Path:
    """One table as Parquet or CSV; ``extra`` adds constant columns (e.g. the point index).

    A :class:`~federation.results.spool.Table` is written a chunk at a time (a Parquet row group or
    a run of CSV lines each), so a table of 10^8 packets never sits in memory."""
    import pyarrow as pa

    def arrow(cols: Mapping[str, np.ndarray]) -> pa.Table:
        out = {k: pa.array(v) for k, v in cols.items()}
        n = len(next(iter(cols.values()))) if cols else 0
        for k, v in extra.items():
            out[k] = pa.array([v] * n)
        return pa.table(out)

    parts = table.chunks() if isinstance(table, Table) else iter([table])
    first = next(parts, None)
    if first is None:  # a table without rows: its columns, empty
        first = {k: np.zeros(0, dtype=np.int64) for k in table}
    head = arrow(first)
    out = path.with_suffix(".csv" if fmt == "csv" else ".parquet")
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
    return out
