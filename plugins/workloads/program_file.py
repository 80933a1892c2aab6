"""Workload ``program``: rank programs read from a schedule file (GOAL, a SimGrid TI trace,
or a DUMPI trace as ``dumpi2ascii`` prints it).

::

    workload:
      kind: program
      path: allreduce_16.goal     # relative to this experiment file
      format: auto                # goal | ti | dumpi | auto (".goal": GOAL, a folder: DUMPI,
                                  # else TI)
      calc_unit: 1ns              # GOAL: length of one calc unit (LogGOPSim: ns)
      host_speed: 1e9             # TI: flop/s of every host, for "compute <flops>"
      compute_scale: 1.0          # DUMPI: the gaps between calls times this
      datatype_sizes: {17: 48}    # DUMPI: bytes of user-defined datatypes by id
      algorithms: {allreduce: ring}   # DUMPI: collectives' algorithms (default auto)

Each format's fields apply to it alone: ``calc_unit`` with a GOAL schedule, ``host_speed``
with a TI trace, ``compute_scale``, ``datatype_sizes`` and ``algorithms`` with a DUMPI trace;
one given for a file of another format is refused (it would be silently ignored, and a run
that looks scaled would not be).

The programs run closed-loop: each rank's operations start when their dependencies allow
(see :mod:`federation.programs`).  Rank i runs on node i.  The file is read and checked by the
preflight of every sweep point (``federation validate`` too), so a missing, malformed, cyclic
or deadlocking schedule is refused before any point runs, naming the file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from federation import Params, Workload, WorkloadContext, hookimpl
from federation.errors import ConfigError
from federation.models.base import DocumentPath
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import Time, clock_ps, is_whole_ps
from federation.programs.goal import read_goal
from federation.programs.model import RankPrograms
from federation.programs.ti import DEFAULT_HOST_SPEED, read_ti

#: the format each format-specific field applies to (the others ignore it)
FORMAT_FIELDS = {"calc_unit": "goal", "host_speed": "ti", "compute_scale": "dumpi",
                 "datatype_sizes": "dumpi", "algorithms": "dumpi"}
_FORMAT_NAMES = {"goal": "GOAL schedules", "ti": "SimGrid TI traces", "dumpi": "DUMPI traces"}


class ProgramFileParams(Params):
    path: DocumentPath = Field(description="schedule file, relative to the experiment file")
    format: Literal["goal", "ti", "dumpi", "auto"] = Field(
        "auto", description="goal, ti (SimGrid time-independent trace), dumpi (a folder of "
                            "dumpi2ascii files, one per rank, or one file), or auto: '.goal' "
                            "suffix for GOAL, a folder or '.dumpi.txt' for DUMPI, anything "
                            "else a TI trace")
    calc_unit: Time = Field(1e-9, description="GOAL: duration of one 'calc' unit (LogGOPSim "
                                              "counts nanoseconds)")
    host_speed: float = Field(DEFAULT_HOST_SPEED, gt=0, allow_inf_nan=False,
                              description="TI: flop/s of a host, for 'compute <flops>'")
    compute_scale: float = Field(1.0, ge=0, allow_inf_nan=False,
                                 description="DUMPI: the compute between calls times this")
    datatype_sizes: dict[int, int] = Field(default_factory=dict,
                                           description="DUMPI: bytes of datatypes by id")
    algorithms: dict[str, str] = Field(default_factory=dict, description="DUMPI: the "
                                       "algorithm of each collective (default auto)")

    @field_validator("compute_scale")
    @classmethod
    def _scale_in_clock(cls, scale: float) -> float:
        """A DUMPI trace's walltimes count nanoseconds: a scale that makes even one
        nanosecond of compute leave the engine's clock is refused before the trace is read
        (it overflowed int64 and was refused as a bare number without the field)."""
        if scale * 1000 >= TIME_LIMIT_PS:
            raise ValueError(f"{scale:g} makes each nanosecond between two calls "
                             f"{scale * 1000:.4g} ps of compute: even the shortest gap a trace "
                             f"records (1 ns) would be beyond {CLOCK_LIMIT}; it must be below "
                             f"{TIME_LIMIT_PS / 1000:.4g}")
        return scale


class ProgramFile(Workload):
    """MPI-style rank programs from a GOAL schedule, a SimGrid TI trace or a DUMPI trace."""

    name = "program"
    Params = ProgramFileParams
    params: ProgramFileParams
    closed_loop = True

    def file_format(self) -> str:
        fmt = self.params.format
        if fmt == "auto":
            p = Path(self.params.path)
            if p.is_dir() or p.name.endswith(".dumpi.txt"):
                return "dumpi"
            return "goal" if p.suffix.lower() == ".goal" else "ti"
        return fmt

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        """Read the file, bounded by the machine (``num_ranks``, a trace's ranks and its list
        of files against the nodes) and by the operation budget of ``--max-memory``
        (:mod:`federation.programs.reading`) while it is read.  The caller checks the result
        (:func:`federation.pipeline.rank_programs.build_programs`: the preflight of every point)."""
        path = Path(self.params.path)
        fmt = self.file_format()
        self._check_fields(fmt)
        if not (path.is_file() or (fmt == "dumpi" and path.is_dir())):
            raise ConfigError(f"{path} is not a regular file" if path.exists()
                              else f"no such schedule file: {path}", path="workload.path")
        n_nodes = ctx.network.n_nodes
        if fmt == "dumpi":
            from federation.programs.collectives import ALGORITHMS
            from federation.programs.dumpi import read_dumpi

            for op, alg in self.params.algorithms.items():
                if op not in ALGORITHMS:
                    raise ConfigError(f"{op!r} is not a collective (one of "
                                      f"{', '.join(ALGORITHMS)})", path=f"workload.algorithms.{op}")
                if alg != "auto" and alg not in ALGORITHMS[op]:
                    raise ConfigError(f"{op} has no algorithm {alg!r} (one of auto, "
                                      f"{', '.join(ALGORITHMS[op])})",
                                      path=f"workload.algorithms.{op}")
            return read_dumpi(path, compute_scale=self.params.compute_scale,
                              datatype_sizes=self.params.datatype_sizes,
                              algorithms=self.params.algorithms, max_ranks=n_nodes)
        if fmt == "goal":
            unit = clock_ps(self.params.calc_unit, "calc_unit", path="workload.calc_unit")
            if unit < 1 or not is_whole_ps(self.params.calc_unit):
                raise ConfigError(f"{self.params.calc_unit * 1e12:.10g}ps is not a whole "
                                  "number of picoseconds (at least 1ps)",
                                  path="workload.calc_unit")
            return read_goal(path, calc_unit_ps=unit, max_ranks=n_nodes)
        return read_ti(path, host_speed_flops=self.params.host_speed, max_ranks=n_nodes)

    def _check_fields(self, fmt: str) -> None:
        """Refuse a field of another format than the file's set to anything but its default:
        the reader of this format never reads it, so the run would silently differ from what
        the experiment says.  A default passes, given or not: a point's resolved document
        writes every field, and must run again."""
        fields = type(self.params).model_fields
        for name, own in sorted(FORMAT_FIELDS.items()):
            default = fields[name].get_default(call_default_factory=True)
            if own == fmt or getattr(self.params, name) == default:
                continue
            how = f"format {fmt}" if self.params.format != "auto" else (
                f"format {fmt} (auto: {self._auto_reason(fmt)})")
            raise ConfigError(f"{name} applies to {_FORMAT_NAMES[own]} (format {own}) only; "
                              f"{Path(self.params.path).name} is read as {how}, which ignores "
                              "it: remove it, or give the format it belongs to",
                              path=f"workload.{name}")

    def _auto_reason(self, fmt: str) -> str:
        """Why ``format: auto`` chose ``fmt`` (for messages)."""
        return {"dumpi": "a folder or a '.dumpi.txt' name", "goal": "its '.goal' suffix",
                "ti": "neither a '.goal' suffix nor a folder"}[fmt]


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(ProgramFile)
