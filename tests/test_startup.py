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


def test_the_console_script_runs_its_command_with_the_collector_on(monkeypatch) -> None:
    import federation.cli as cli

    seen: list[tuple[bool, int]] = []

    def main(argv: list[str] | None = None) -> int:
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return 0

    monkeypatch.setattr(cli, "main", main)
    assert gc.get_freeze_count() == 0
    try:
        with pytest.raises(SystemExit) as exc:
            cli.entry()
    finally:
        gc.unfreeze()
    assert exc.value.code == 0
    assert seen and seen[0][0] is True and seen[0][1] > 0  # start-up's objects frozen
