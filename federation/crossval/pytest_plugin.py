"""Validation suites as pytest tests (installed through the ``pytest11`` entry point).

Any file named ``*.crossval.yaml`` (or ``.yml``, ``.json``) that pytest is asked to collect
becomes a test module: one test per scenario x metric (x compared engine, when a suite compares
more than two engines), e.g. ::

    pytest schemas/crossval/native-vs-simgrid.crossval.yaml
    ...::zero-load-small/message_completion_ns[0] PASSED
    ...::fattree-shift/makespan_ns SKIPPED (engine 'simgrid' is not installed: ...)

A test passes when the figure is within its tolerance, fails naming both figures, the
difference and the tolerance, and is *skipped* (never passed) when an engine it needs is not
installed.  Each scenario runs once per engine however many of its tests are selected.  The
module imports nothing heavy until a suite is collected, so installing hpc-federation costs other
pytest sessions nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SUFFIXES = (".crossval.yaml", ".crossval.yml", ".crossval.json")


class CrossvalViolation(Exception):
    """A figure outside its tolerance, or an engine that failed while simulating."""


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIXES):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteFile(pytest.File):
    """A suite file; its :class:`~federation.crossval.run.SuiteRunner` is shared by its tests."""

    runner: Any = None

    def collect(self) -> Iterator[pytest.Item]:
        from federation.crossval.run import SuiteRunner

        self.runner = SuiteRunner(self.path)
        suite = self.runner.suite
        several = len(suite.compared_engines) > 1
        for i, j, engine in self.runner.items():
            s = suite.scenarios[i]
            name = f"{s.name}/{s.metrics[j].label}" + (f"@{engine}" if several else "")
            yield CheckItem.from_parent(self, name=name, index=(i, j, engine))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        from federation.errors import FederationError

        if isinstance(excinfo.value, FederationError):
            return f"error: {excinfo.value}"
        return str(super().repr_failure(excinfo))


class CheckItem(pytest.Item):
    """One metric of one scenario: an engine against the suite's reference engine."""

    def __init__(self, *, index: tuple[int, int, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, SuiteFile)
        check = parent.runner.check(*self.index)
        if check.status == "not run":
            pytest.skip(check.reason or "an engine is not installed")
        if check.status == "error":
            raise CrossvalViolation(check.reason)
        if check.status == "fail":
            from federation.crossval.report import difference_text

            raise CrossvalViolation(
                f"{check.engine} {check.value:.6g} {check.unit} vs {check.reference_engine} "
                f"{check.reference:.6g} {check.unit}: difference "
                f"{difference_text(check.difference, check.relative_difference)}, tolerance "
                f"{check.tolerance}" + (f" ({check.why.strip()})" if check.why else ""))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        from federation.errors import FederationError

        if isinstance(excinfo.value, CrossvalViolation | FederationError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"crossval {self.name}"
