"""Engine ``sst``: delegate an experiment to SST merlin (``sst`` run as a subprocess).

Registered like every engine, so ``engine: {kind: sst, ...}`` validates its parameters
(:class:`~federation.adapters.sst.options.SstOptions`), ``federation plugins`` shows whether
``sst`` is installed, and ``federation run`` runs it like any engine: SST's endpoints report
window statistics, not the per-packet arrays the native summary reads, so the engine runs each
point its own way (:meth:`Sst.run_point`, :mod:`federation.adapters.sst.run`) and the summary
carries what merlin and ember report, ``null`` for the rest.  What SST cannot express is
refused before anything runs (:meth:`Sst.check`), naming the field.

``federation sst config FILE --out DIR`` writes each point's configuration without needing SST;
``federation sst run`` is the same run as ``federation run`` with this engine.
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

    def check(self, point: Any, built: Any) -> None:
        """Refuse what merlin and ember cannot express, naming the field (checked without
        SST, as ``federation sst config`` writes configurations without it; a missing
        ``sst`` is refused when the first point starts, before any has run)."""
        from federation.adapters.sst.config import build_config
        from federation.pipeline.jobs import place_jobs

        build_config(point, built.network, self.params, place_jobs(point, built))

    def program(self) -> str | None:
        """``sst --version`` of the program that runs, for ``results.json``."""
        from federation.adapters.sst.launch import sst_version

        path = find_sst(self.params.sst_binary)
        return sst_version(path) if path is not None else None

    def run_point(self, index: int, point: Any, built: Any, placed: Any,
                  folder: Any) -> Any:
        """The point through sst (configuration, run, statistics read back)."""
        from federation.adapters.sst.run import run_point

        return run_point(index, point, built, placed, folder)

    def run(self, job: Any, progress: Any = None) -> Any:
        """SST runs whole points (:meth:`run_point`), never a prepared native run."""
        require_sst(self.params)
        raise BackendUnavailable(
            "engine sst runs whole points (federation run calls its run_point); it cannot run "
            "a prepared native run")


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
        from federation.pipeline.inputs import check_inputs
        from federation.pipeline.load import load_experiment

        loaded = load_experiment(file, set_ or [])
        check_inputs(loaded, out, "--out")  # the folder is replaced whole
        paths = write_configs(loaded, out, overwrite)
        loaded.print_notes()  # once written: a refusal stays one line
        for p in paths:
            print(p)

    @sst_app.command("run")
    def run(
        file: Annotated[Path, typer.Argument(help="experiment file")],
        out: Annotated[Path, typer.Option("--out", help="output folder")],
        set_: Annotated[list[str] | None, typer.Option("--set", help="override a field")] = None,
        overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    ) -> None:
        """Run every point with sst, as ``federation run FILE --out OUT`` with engine sst does
        (the file's own sst options, else sst's defaults): results.json (engine sst) and
        per-point files; a stopped or failing sweep keeps its finished points."""
        from federation.adapters.sst.run import run_experiment
        from federation.pipeline.inputs import check_inputs
        from federation.pipeline.load import load_experiment

        # engine.kind=sst keeps an sst engine's own options and gives another engine sst's
        loaded = load_experiment(file, ["engine.kind=sst", *(set_ or [])])
        check_inputs(loaded, out, "--out")  # the folder is replaced whole
        placed: list[Path] = []
        run_experiment(loaded, out, overwrite, placed=placed.append,
                       checked=loaded.print_notes)
        print((placed[0] if placed else out) / "results.json")

    app.add_typer(sst_app, name="sst")
