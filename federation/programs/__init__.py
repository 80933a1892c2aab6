"""MPI-style rank programs: the operation-graph model, how to build it, and file formats."""

from federation.programs.model import (
    COMPUTE,
    FINISH,
    RECV,
    SEND,
    START,
    RankPrograms,
)

__all__ = ["COMPUTE", "FINISH", "RECV", "SEND", "START", "RankPrograms"]
