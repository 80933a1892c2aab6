"""Tables too long to hold: written a chunk at a time to a temporary folder, read back a chunk
at a time by the table writers (:func:`federation.results.outputs.write_table`), or whole through
the ``Mapping`` interface (small runs, tests).

The per-packet and per-message tables of a long run (10^8 packets) are built this way, so
that keeping them (``outputs.packets``, ``outputs.messages``) costs disk, not memory.  Rows
arrive nearly in key order (packets are delivered roughly in the order they were created),
so :class:`InOrder` holds back only the rows behind a gap, such as packets still in flight,
and the tables come out sorted by packet or message number.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np

from federation.errors import OutputError, os_reason

Columns = dict[str, np.ndarray]


class Table(Mapping[str, np.ndarray]):
    """A table read as chunks (:meth:`chunks`); ``table[name]`` joins one column whole."""

    def __init__(self, chunks: Callable[[], Iterator[Columns]] | None,
                 names: list[str]) -> None:
        self._chunks = chunks  # None: a subclass overrides chunks()
        self.names = names

    def chunks(self) -> Iterator[Columns]:
        assert self._chunks is not None
        yield from self._chunks()

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.names:
            raise KeyError(name)
        parts = [c[name] for c in self.chunks()]
        return np.concatenate(parts) if parts else np.zeros(0)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def mapped(self, fn: Callable[[Columns], Columns], names: list[str]) -> Table:
        """The same rows with ``fn`` applied to each chunk (new or changed columns)."""
        return Table(lambda: (fn(c) for c in self.chunks()), names)

    def then(self, more: Columns) -> Table:
        """These rows followed by ``more`` (same columns)."""
        def chunks() -> Iterator[Columns]:
            yield from self.chunks()
            if more and len(next(iter(more.values()))):
                yield more
        return Table(chunks, self.names)


class Held(Table):
    """A table's rows held in memory, chunk by chunk as they were: what a sweep's worker
    returns to its client (:mod:`federation.pipeline.distributed`).  A :class:`Spool` pickled
    would carry only the name of its folder, on the worker's disk and removed with the worker's
    object, so the rows themselves travel (numpy buffers)."""

    def __init__(self, table: Table) -> None:
        self.parts = list(table.chunks())
        super().__init__(None, list(table.names))

    def chunks(self) -> Iterator[Columns]:
        yield from self.parts


class Spool(Table):
    """Rows appended a chunk at a time to files in a temporary folder (removed with the
    object)."""

    def __init__(self, names: list[str]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="federation-table-")
        self.n = 0
        self.rows = 0
        # it reads its own chunks (chunks() below): given to Table as the bound method, the
        # reader was a reference to itself, and the folder went only at a later cyclic
        # collection, which a sweep's Dask worker may never reach before it is stopped (a
        # folder per point left in $TMPDIR)
        super().__init__(None, list(names))

    def append(self, cols: Columns) -> None:
        k = len(next(iter(cols.values()))) if cols else 0
        if not k:
            return
        for name in self.names:
            path = Path(self._dir.name) / f"{self.n}-{name}.npy"
            try:
                np.save(path, cols[name])
            except OSError as exc:  # a full temporary disk: say which, and what to do
                path.unlink(missing_ok=True)
                raise OutputError(
                    f"cannot write a temporary table in {self._dir.name}: {os_reason(exc)} "
                    "(the per-packet and per-message tables of a run are spooled to the "
                    "temporary folder, $TMPDIR, before they are written out: point TMPDIR "
                    "at a larger disk, or turn outputs.packets / outputs.messages off)"
                ) from None
        self.n += 1
        self.rows += k

    def chunks(self) -> Iterator[Columns]:
        # the bytes are read by Python and parsed from memory: given a file, np.load reads it
        # with np.fromfile, whose os.PathLike check runs Python code, and a stop signal
        # (federation.interrupts) landing there came out as "TypeError: expected str, bytes
        # or os.PathLike object, not BufferedReader", a traceback instead of the stop
        for i in range(self.n):
            yield {name: np.load(io.BytesIO((Path(self._dir.name) / f"{i}-{name}.npy")
                                            .read_bytes()))
                   for name in self.names}


class InOrder:
    """Passes rows on to a :class:`Spool` in order of ``key`` (0, 1, 2, ...), holding back
    the rows that arrive ahead of a missing one until it comes (or :meth:`flush`)."""

    def __init__(self, key: str, out: Spool) -> None:
        self.key = key
        self.out = out
        self.next = 0
        self.held: Columns | None = None

    def add(self, cols: Columns) -> None:
        if self.held is not None:
            cols = {k: np.concatenate([self.held[k], cols[k]]) for k in cols}
        keys = cols[self.key]
        o = np.argsort(keys, kind="stable")
        cols = {k: v[o] for k, v in cols.items()}
        # keys are distinct, so the rows ready to go are the prefix without a gap
        in_place = cols[self.key] == self.next + np.arange(cols[self.key].size)
        ready = in_place.size if in_place.all() else int(np.argmin(in_place))
        self.out.append({k: v[:ready] for k, v in cols.items()})
        self.held = {k: v[ready:] for k, v in cols.items()}
        self.next += ready

    def flush(self) -> Spool:
        """Everything held, in key order (the gaps will not be filled), and the spool."""
        if self.held is not None:
            self.out.append(self.held)
            self.held = None
        return self.out
