"""Start-up without the cyclic garbage collector.

Importing the framework and its plugins creates tens of thousands of objects (pydantic models,
dataclasses, functions) and almost no garbage.  CPython counts allocations, not garbage, so
start-up triggers several collections, each walking every object made so far: about 0.09 s of
a 0.67 s ``federation run`` on a small machine (BookSim's 72-node dragonfly, stop 47).
:func:`paused` turns the collector off for such a stretch and restores it as it was;
:func:`freeze_startup` (the console script only) moves what start-up made out of the
collector's way for the rest of the process, since modules, classes and models live as long.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block, as it was after (nested blocks are fine)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def freeze_startup() -> None:
    """Move every object tracked now to the collector's permanent generation, so that later
    collections skip them.  For a process's entry point after its imports: cycles made
    garbage before this are never collected (start-up makes next to none)."""
    gc.freeze()
