"""Engine ``sst``: delegate an experiment to SST merlin (``sst`` run as a subprocess).

Registered like every engine, so ``engine: {kind: sst, ...}`` validates its parameters
(:class:`~federation.adapters.sst.options.SstOptions`) and ``federation plugins`` shows whether
``sst`` is installed.  Running goes through ``federation sst run FILE``: SST's endpoints report
window statistics, not the per-packet arrays that ``federation run`` summarises, so that command
has a driver of its own (:mod:`federation.adapters.sst.run`).  ``federation run`` with this
engine stops before simulating anything, with one message saying which of the two applies:
``sst`` is not installed, or use ``federation sst run``.

``federation sst config FILE --out DIR`` writes each point's configuration without needing SST.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from federation import Engine, hookimpl
from federation.adapters.sst.launch import find_sst, require_sst
from federation.adapters.sst.options import SstOptions
from federation.errors import BackendUnavailable


class Sst(Engine):
    """SST merlin through a generated configuration (see docs/sst.md)."""

    name = "sst"
    Params = SstOptions
    params: SstOptions

    @classmethod
    def found(cls) -> bool:
        """True when the default ``sst`` program is on PATH."""
        return find_sst("sst") is not None

    def run(self, job: Any, progress: Any = None) -> Any:
        """Refuse with one message: sst missing, or the SST driver is the way to run it."""
        require_sst(self.params)
        raise BackendUnavailable(
            "engine sst: `federation run` summarises per-packet results, which SST's endpoints "
            "do not report; run this experiment with `federation sst run FILE --out DIR` (or "
            "write its configurations with `federation sst config FILE --out DIR`)")


@hookimpl
def federation_register_engines(register) -> None:  # noqa: ANN001
    register(Sst)


@hookimpl
def federation_add_commands(app: Any) -> None:
    """``federation sst config`` and ``federation sst run``."""
    sst_app = typer.Typer(help="SST merlin: write configurations, or run them with sst",
                          no_args_is_help=True)

    @sst_app.command("config")
    def config(
        file: Annotated[Path, typer.Argument(help="experiment file")],
        out: Annotated[Path, typer.Option("--out", help="folder for config-N.py")],
        set_: Annotated[list[str] | None, typer.Option("--set", help="override a field")] = None,
        overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    ) -> None:
        """Write the SST configuration of every point (no SST needed)."""
        from federation.adapters.sst.run import write_configs
        from federation.pipeline.load import load_experiment

        for p in write_configs(load_experiment(file, set_ or []), out, overwrite):
            print(p)

    @sst_app.command("run")
    def run(
        file: Annotated[Path, typer.Argument(help="experiment file")],
        out: Annotated[Path, typer.Option("--out", help="output folder")],
        set_: Annotated[list[str] | None, typer.Option("--set", help="override a field")] = None,
        overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    ) -> None:
        """Run every point with sst; writes results.json (engine sst) and per-point files."""
        from federation.adapters.sst.run import run_experiment
        from federation.pipeline.load import load_experiment

        run_experiment(load_experiment(file, set_ or []), out, overwrite)
        print(out / "results.json")

    app.add_typer(sst_app, name="sst")
