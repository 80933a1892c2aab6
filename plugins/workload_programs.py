"""Rank-program workloads ``pingpong``, ``allreduce`` and ``halo3d`` (being built)."""

from __future__ import annotations

from federation import hookimpl


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    pass
