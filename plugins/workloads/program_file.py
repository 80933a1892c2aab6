"""Workload ``program``: rank programs read from a schedule file (GOAL or SimGrid TI trace).

::

    workload:
      kind: program
      path: allreduce_16.goal     # relative to this experiment file
      format: auto                # goal | ti | auto (".goal" suffix: GOAL, else TI)
      calc_unit: 1ns              # GOAL: length of one calc unit (LogGOPSim: ns)
      host_speed: 1e9             # TI: flop/s of every host, for "compute <flops>"

The programs run closed-loop: each rank's operations start when their dependencies allow
(see :mod:`federation.programs`).  Rank i runs on node i.  The file is read and checked by the
preflight of every sweep point (``federation validate`` too), so a missing, malformed, cyclic
or deadlocking schedule is refused before any point runs, naming the file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from federation import Params, Workload, WorkloadContext, hookimpl
from federation.errors import ConfigError
from federation.models.base import DocumentPath
from federation.models.units import Time, clock_ps, format_time
from federation.programs.goal import read_goal
from federation.programs.model import RankPrograms
from federation.programs.ti import DEFAULT_HOST_SPEED, read_ti


class ProgramFileParams(Params):
    path: DocumentPath = Field(description="schedule file, relative to the experiment file")
    format: Literal["goal", "ti", "auto"] = Field(
        "auto", description="goal, ti (SimGrid time-independent trace), or auto: '.goal' "
                            "suffix for GOAL, anything else a TI trace")
    calc_unit: Time = Field(1e-9, description="GOAL: duration of one 'calc' unit (LogGOPSim "
                                              "counts nanoseconds)")
    host_speed: float = Field(DEFAULT_HOST_SPEED, gt=0, allow_inf_nan=False,
                              description="TI: flop/s of a host, for 'compute <flops>'")


class ProgramFile(Workload):
    """MPI-style rank programs from a GOAL schedule or a SimGrid TI trace."""

    name = "program"
    Params = ProgramFileParams
    params: ProgramFileParams
    closed_loop = True

    def file_format(self) -> str:
        fmt = self.params.format
        if fmt == "auto":
            return "goal" if Path(self.params.path).suffix.lower() == ".goal" else "ti"
        return fmt

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        """Read the file, bounded by the machine (``num_ranks``, a trace's ranks and its list
        of files against the nodes) and by the operation budget of ``--max-memory``
        (:mod:`federation.programs.reading`) while it is read.  The caller checks the result
        (:func:`federation.pipeline.rank_programs.build_programs`: the preflight of every point)."""
        path = Path(self.params.path)
        if not path.is_file():
            raise ConfigError(f"{path} is not a regular file" if path.exists()
                              else f"no such schedule file: {path}", path="workload.path")
        n_nodes = ctx.network.n_nodes
        if self.file_format() == "goal":
            unit = clock_ps(self.params.calc_unit, "calc_unit", path="workload.calc_unit")
            if unit < 1 or abs(unit - self.params.calc_unit * 1e12) > 1e-6 * unit:
                raise ConfigError(f"{format_time(self.params.calc_unit)} is not a whole "
                                  "number of picoseconds (at least 1ps)",
                                  path="workload.calc_unit")
            return read_goal(path, calc_unit_ps=unit, max_ranks=n_nodes)
        return read_ti(path, host_speed_flops=self.params.host_speed, max_ranks=n_nodes)


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(ProgramFile)
