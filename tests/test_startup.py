"""Start-up without the cyclic collector (federation._gc): paused only while the package and
its plugins import, restored as it was, and the console script's start-up frozen out of the
collector's way before its command runs."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from federation import _gc


@pytest.mark.parametrize("enabled", [True, False])
def test_paused_restores_the_collector_as_it_was(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with _gc.paused():
            assert not gc.isenabled()
            with _gc.paused():  # nested: still off inside, still off after the inner one
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), _gc.paused():
            raise RuntimeError("an import that fails")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_importing_the_package_and_plugins_leaves_the_collector_on() -> None:
    code = ("import gc, federation\n"
            "from federation.plugin.registry import get_plugins\n"
            "get_plugins()\n"
            "print(gc.isenabled(), gc.get_freeze_count())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "0"]  # a library user's process: nothing frozen


@pytest.mark.parametrize("freeze", [True, False])
def test_a_command_runs_with_the_collector_on(monkeypatch, freeze: bool) -> None:
    """The console script (``main(freeze=True)``) runs its command with start-up's objects
    frozen; an in-process caller's collector is left as it was, nothing frozen."""
    import federation.cli as cli

    real = cli.app
    seen: list[tuple[bool, int]] = []

    class App:  # the real application (plugins add commands to it), but not run
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def __call__(self, args: list[str] | None = None, standalone_mode: bool = True) -> None:
            seen.append((gc.isenabled(), gc.get_freeze_count()))
            raise SystemExit(0)

    monkeypatch.setattr(cli, "app", App())
    assert gc.get_freeze_count() == 0
    try:
        assert cli.main(["plugins"], freeze=freeze) == 0
    finally:
        gc.unfreeze()
    assert seen == [(True, seen[0][1])] and (seen[0][1] > 0) is freeze
