"""One place for terminal output: progress on stderr only when it is a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[..., None]


@contextmanager
def progress_reporter(enabled: bool | None = None) -> Iterator[Progress | None]:
    """Yield a ``(label, done, total, unit="packets")`` callback drawing a progress bar on
    stderr, or ``None`` when stderr is not a terminal (CI logs and pipes stay clean)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True, highlight=False)
    with Progress(TextColumn("{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} {task.fields[unit]}"),
                  TimeElapsedColumn(),
                  console=console, transient=True) as prog:
        tasks: dict[str, int] = {}

        def cb(label: str, done: int, total: int, unit: str = "packets") -> None:
            if label not in tasks:
                tasks[label] = prog.add_task(label, total=total, unit=unit)
            prog.update(tasks[label], completed=done, total=total)

        yield cb
