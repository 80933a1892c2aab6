"""Workload ``program``: rank programs read from a schedule file (being built)."""

from __future__ import annotations

from federation import hookimpl


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    pass
