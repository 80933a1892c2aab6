"""Running a validation suite: each scenario on each engine, then every metric compared.

:class:`SuiteRunner` runs a (scenario, engine) pair at most once and keeps its figures, so the
CLI (every check in order) and the pytest plugin (one test per check, any order, any subset)
share the same code.  A run goes through :func:`federation.pipeline.run.run_experiment` exactly as
``federation run`` would, into a temporary folder, with the experiment's engine replaced by the
suite's.

Outcomes:

* an engine whose program or library is not installed (``Engine.found()`` false) is **not
  run**; its checks say so and are never counted as passed;
* an error while simulating (deadlock, SimGrid failure) makes that run's checks **error**;
* a mistake in the suite or a scenario (bad field, a field the engine refuses before running,
  e.g. Valiant routing on SimGrid) is a :class:`~federation.errors.ConfigError` naming the file
  and field, as for ``federation run``: exit status 2, nothing compared.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from federation._version import __version__
from federation.crossval.metrics import figure
from federation.crossval.models import Check, EngineRun, Suite, SuiteResult
from federation.errors import ConfigError, FederationError
from federation.models.base import read_document, validate_model

#: what every run writes: only the per-message table (the figures need nothing else)
OUTPUTS = "outputs={format: parquet, packets: false, ports: false, messages: true}"

Progress = Callable[[str, str], None]


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file; unknown engines are refused naming ``engines``."""
    from federation.plugin.registry import get_plugins

    source = str(path)
    if not Path(path).is_file():  # stat only: a FIFO would block the read
        if Path(path).exists():
            from federation.results.destinations import path_kind

            raise ConfigError(f"the suite is {path_kind(Path(path).stat().st_mode)}, not a "
                              "regular file", source=source)
        raise ConfigError("suite file not found", source=source)
    suite = validate_model(Suite, read_document(path), source)
    known = get_plugins().engines.items
    for i, name in enumerate(suite.engines):
        if name not in known:
            raise ConfigError(f"unknown engine {name!r} (installed plugins provide: "
                              f"{', '.join(sorted(known))})", source=source, path=f"engines[{i}]")
    return suite


def not_installed_reason(engine: str) -> str | None:
    """Why ``engine`` cannot run here, or ``None`` when it can."""
    from federation.plugin.registry import get_plugins

    cls = get_plugins().engines.items[engine].cls
    if cls.found():
        return None
    hint = getattr(cls, "install_hint", None)
    return f"engine {engine!r} is not installed" + (f": {hint}" if hint else "")


class SuiteRunner:
    """Runs the scenarios of one suite lazily and compares their figures."""

    def __init__(self, path: str | Path, suite: Suite | None = None,
                 progress: Progress | None = None) -> None:
        self.path = Path(path)
        self.suite = suite or load_suite(path)
        self.progress = progress
        self._runs: dict[tuple[int, str], EngineRun] = {}

    # ------------------------------------------------------------------ runs
    def run(self, index: int, engine: str) -> EngineRun:
        """Scenario ``index`` on ``engine`` (run once, then remembered)."""
        key = (index, engine)
        if key not in self._runs:
            self._runs[key] = self._run(index, engine)
        return self._runs[key]

    def _run(self, index: int, engine: str) -> EngineRun:
        scenario = self.suite.scenarios[index]
        reason = not_installed_reason(engine)
        if reason is not None:
            return EngineRun(scenario=scenario.name, engine=engine, status="not run",
                             reason=reason)
        if self.progress is not None:
            self.progress(scenario.name, engine)
        from federation.pipeline.run import run_experiment  # every engine, SST too
        loaded = self._load(index, engine)
        with tempfile.TemporaryDirectory(prefix="federation-crossval-") as tmp:
            try:
                result = run_experiment(loaded, Path(tmp) / "run", overwrite=True)
            except ConfigError as exc:
                raise self._in_suite(exc, index) from None
            except FederationError as exc:
                return EngineRun(scenario=scenario.name, engine=engine, status="error",
                                 reason=str(exc))
            point = result.points[0]
            table = point.files.get("messages")
            messages = _read_messages(Path(tmp) / "run" / table) if table else NO_MESSAGES
        figures = {}
        for j, metric in enumerate(scenario.metrics):
            try:
                figures[metric.label] = figure(metric, point, messages)
            except IndexError as exc:
                raise ConfigError(str(exc), source=str(self.path),
                                  path=f"scenarios[{index}].metrics[{j}].message") from None
        origin = point.components.get("engine")
        return EngineRun(scenario=scenario.name, engine=engine, status="ran",
                         program=origin.program if origin else None, figures=figures)

    def _load(self, index: int, engine: str) -> Any:
        """The scenario's experiment with the suite's engine, as a one-point experiment."""
        from federation.pipeline.load import load_experiment

        scenario = self.suite.scenarios[index]
        overrides = [f"engine={{kind: {engine}}}", OUTPUTS]
        where = f"scenarios[{index}].experiment"
        if isinstance(scenario.experiment, str):
            path = self.path.parent / scenario.experiment
            if not path.is_file():
                raise ConfigError(f"experiment file {scenario.experiment!r} not found (looked "
                                  f"at {path})", source=str(self.path), path=where)
            loaded = load_experiment(path, overrides)
        else:
            loaded = self._load_inline(index, overrides)
        if len(loaded.points) != 1:
            raise self._in_suite(ConfigError(
                f"a scenario is one run, this experiment sweeps {len(loaded.points)} points; "
                "make each point a scenario", source=loaded.source, path="sweep"), index)
        return loaded

    def _load_inline(self, index: int, overrides: list[str]) -> Any:
        """An inline experiment, loaded as the document of a file beside the suite file
        (:meth:`_inline_source`, never written), so that the loader resolves every relative
        path in it, however deep (a job's ``workload.compute.profile``), against the suite
        file's folder exactly as it would an experiment file's there, wherever the suite is
        run from; errors name the suite's field."""
        from federation.pipeline.load import load_experiment

        doc = self.suite.scenarios[index].experiment
        assert isinstance(doc, dict)  # an experiment file's name is read by _load itself
        try:
            return load_experiment(self._inline_source(index), overrides, document=doc)
        except ConfigError as exc:
            raise self._in_suite(exc, index) from None

    def _inline_source(self, index: int) -> str:
        """The name an inline experiment is loaded under: a file in the suite's folder
        (absolute, so that its paths stay there whatever the run does with the working
        directory), named after its place in the suite so an error left unlocated still
        says where it is."""
        path = self.path.absolute()
        return str(path.parent / f"{path.name}#scenarios[{index}].experiment")

    def _in_suite(self, exc: ConfigError, index: int) -> ConfigError:
        """An error in an inline experiment, located in the suite file."""
        inline = self._inline_source(index)
        where = f"scenarios[{index}].experiment"
        if exc.source is None and inline in exc.message:  # an engine's error, already located
            return ConfigError(exc.message.replace(inline, f"{self.path}: {where}"))
        if exc.source != inline:
            return exc
        path = f"{where}.{exc.path}" if exc.path else where
        return ConfigError(exc.message, source=str(self.path), path=path)

    # ------------------------------------------------------------------ checks
    def check(self, index: int, metric_index: int, engine: str) -> Check:
        """One metric of scenario ``index``: ``engine`` against the reference engine."""
        scenario = self.suite.scenarios[index]
        metric = scenario.metrics[metric_index]
        ref_name = self.suite.reference_engine
        ref, run = self.run(index, ref_name), self.run(index, engine)
        base = {"scenario": scenario.name, "metric": metric.label, "unit": metric.unit,
                "engine": engine, "reference_engine": ref_name,
                "tolerance": metric.tolerance.describe(metric.unit), "why": metric.why}
        value = run.figures.get(metric.label)
        reference = ref.figures.get(metric.label)
        diff = rel = None
        if value is not None and reference is not None:
            diff = value - reference
            rel = diff / abs(reference) if reference else None
        base.update(value=value, reference=reference, difference=diff, relative_difference=rel)
        for r in (ref, run):
            if r.status != "ran":
                return Check(**base, status="not run" if r.status == "not run" else "error",
                             reason=r.reason)
        if value is None and reference is None:  # not one engine's fault: say both
            return Check(**base, status="error", reason=(
                f"neither {ref_name} nor {engine} reports {metric.label} for scenario "
                f"{scenario.name!r} (it has no message, a message was not delivered, or "
                "neither engine reports this metric)"))
        if value is None or reference is None:
            missing = engine if value is None else ref_name
            return Check(**base, status="error", reason=f"{missing} gave no figure (a message "
                         "was not delivered, or the engine does not report this metric)")
        ok = metric.tolerance.allows(value, reference)
        return Check(**base, status="pass" if ok else "fail",
                     reason=None if ok else "outside the tolerance")

    def items(self) -> list[tuple[int, int, str]]:
        """Every (scenario, metric, compared engine) in suite order."""
        return [(i, j, e) for i, s in enumerate(self.suite.scenarios)
                for j in range(len(s.metrics)) for e in self.suite.compared_engines]

    def run_all(self, require_all_engines: bool = False) -> SuiteResult:
        """Every check of the suite, as the results document."""
        checks = [self.check(i, j, e) for i, j, e in self.items()]
        runs = [self.run(i, e) for i in range(len(self.suite.scenarios))
                for e in self.suite.engines]
        counts = {s: sum(c.status == s for c in checks)
                  for s in ("pass", "fail", "error", "not run")}
        bad = counts["fail"] or counts["error"] or (require_all_engines and counts["not run"])
        return SuiteResult(
            federation_version=__version__, suite=self.suite.name,
            source=str(self.path.resolve()), engines=self.suite.engines,
            reference_engine=self.suite.reference_engine,
            status="failed" if bad else "passed", counts=counts, runs=runs, checks=checks)


#: the per-message table of an engine that writes none (SST): metrics that need it give no
#: figure, and the check says so
NO_MESSAGES: dict[str, np.ndarray] = {}


def _read_messages(path: Path) -> dict[str, np.ndarray]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return {name: table.column(name).to_numpy() for name in
            ("created_ps", "completed_ps", "completion_ps", "size", "measured")}
