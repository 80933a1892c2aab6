"""MPI-style rank programs: the operation-graph model, how to build it, and file formats.

Owns the operation graph (``model``), building it (``builder`` one call at a time,
``assembler`` vectorised), MPI collectives by named algorithms on any communicator
(``collectives``, with ``collective_algorithms``, ``collective_exchanges``,
``collective_ctx``), the GOAL, time-independent and DUMPI trace readers (``goal``, ``ti``,
``dumpi``, streamed within bounds by ``reading``), compute times from distributions
(``compute_time``), the static communication summary (``analysis``) and the checks every
program passes before a run (``checks``, ``matching``).  Workloads build programs here; the
traffic stage checks them against the machine (:mod:`federation.pipeline.rank_programs`).

May import: :mod:`federation.models`, :mod:`federation.errors`.
"""

from federation.programs.builder import (
    ProgramBuilder,
    RankBuilder,
    concatenate,
    programs_from_blocks,
)
from federation.programs.checks import check_programs
from federation.programs.goal import format_goal, parse_goal, read_goal, write_goal
from federation.programs.model import (
    COMPUTE,
    FINISH,
    RECV,
    SEND,
    START,
    RankPrograms,
)
from federation.programs.ti import read_ti

__all__ = ["COMPUTE", "FINISH", "RECV", "SEND", "START", "ProgramBuilder", "RankBuilder",
           "RankPrograms", "check_programs", "concatenate", "format_goal", "parse_goal",
           "programs_from_blocks", "read_goal", "read_ti", "write_goal"]
