"""Stop signals: SIGINT (Ctrl-C), SIGTERM (``kill``, ``timeout``, a batch system's time limit)
and SIGHUP (a closed terminal) all stop a command the same way.

By default Python turns only SIGINT into an exception; SIGTERM and SIGHUP end the process at
once, so a sweep stopped by ``kill`` or a batch system lost every finished point and left its
temporary folder behind.  Here the three become one exception, :class:`Stopped` (a
``KeyboardInterrupt``, so every ``except KeyboardInterrupt`` that cleans up after Ctrl-C does
the same for the other two), raised in the main thread where the signal lands.  The runner
then keeps the finished points and marks the run incomplete, like for a failing point.

* **One stop only.**  The first signal is raised; later ones (Ctrl-C pressed again, a batch
  system's second SIGTERM) are ignored until the command ends, so that keeping the finished
  points and closing a Dask cluster are not themselves interrupted half-way (which left a
  traceback from Dask's exit handler).  SIGKILL still ends the process.
* **Held sections** (:func:`held`): a step that must not stop half-way (swapping an output
  folder into place, starting a local Dask cluster) defers a signal to its end.
* **Exit status** ``128 + signal number``, as a shell reports a process killed by it: 130 for
  SIGINT, 143 for SIGTERM, 129 for SIGHUP.

A signal the process was started ignoring (``nohup`` ignores SIGHUP; a shell's background
job, SIGINT) stays ignored.  Handlers can only be installed from the main thread; elsewhere
(a Dask worker thread, a test runner's thread) these helpers do nothing and Python's
defaults apply.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: the signals that stop a command (SIGHUP does not exist on Windows)
STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP"))
    if s is not None)


class Stopped(KeyboardInterrupt):
    """A stop signal, raised where it landed in the main thread."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def signal_name(exc: BaseException) -> str:
    """``SIGTERM`` for a :class:`Stopped` of it; ``SIGINT`` for a plain ``KeyboardInterrupt``
    (Python's own Ctrl-C)."""
    signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
    return signal.Signals(signum).name


def exit_code(exc: BaseException) -> int:
    """128 + the signal's number (130 for Ctrl-C)."""
    return 128 + (exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT))


class _State:
    def __init__(self) -> None:
        self.installed = 0        # depth of handling() blocks
        self.holding = 0          # depth of held() blocks
        self.received: int | None = None   # the first signal (later ones are ignored)
        self.raised = False       # the first signal has been raised as Stopped


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.received is not None:
        return  # a repeated signal: the first one is being handled
    _state.received = signum
    if _state.holding:
        return  # raised when the held section ends
    _state.raised = True
    raise Stopped(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def handling(to_the_end: bool = False) -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`Stopped` while the block runs (see the
    module docstring); the previous handlers come back on the way out.  With ``to_the_end``
    (a command line's outermost block), once a signal has stopped the block the others stay
    ignored until the process ends: its exit still removes temporary files."""
    if not _main_thread():
        yield
        return
    if _state.installed:  # nested: the outer block's handlers are ours already
        _state.installed += 1
        try:
            yield
        finally:
            _state.installed -= 1
        return
    # a signal ignored when the process started stays ignored: ``nohup`` ignores SIGHUP so the
    # run survives a closed terminal, and a shell's background job ignores SIGINT
    previous = {s: h for s in STOP_SIGNALS if (h := signal.getsignal(s)) != signal.SIG_IGN}
    for s in previous:
        signal.signal(s, _handler)
    _state.installed, _state.received, _state.raised = 1, None, False
    try:
        yield
    finally:
        stopped = _state.received is not None
        for s, h in previous.items():
            keep = h if h is not None else signal.SIG_DFL
            signal.signal(s, signal.SIG_IGN if stopped and to_the_end else keep)
        _state.installed, _state.received, _state.raised = 0, None, False


@contextmanager
def held() -> Iterator[None]:
    """A step that must not stop half-way: a stop signal arriving meanwhile is raised when the
    block ends (unless the block raises of its own accord).  Installs the handlers for the
    duration when no :func:`handling` block is active, so a library caller's Ctrl-C is held
    too."""
    if not _main_thread():
        yield
        return
    with handling():
        _state.holding += 1
        try:
            yield
        finally:
            _state.holding -= 1
        pending = _state.received
        if not _state.holding and pending is not None and not _state.raised:
            _state.raised = True
            raise Stopped(pending)


def stopping() -> bool:
    """True once a stop signal has arrived (in a :func:`handling` block)."""
    return _state.received is not None
