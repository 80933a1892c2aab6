"""From files to validated, resolved experiments.

Two steps, as the open set of plugin kinds requires: the file is first validated against the
static models (:class:`~federation.models.experiment.Experiment`,
:class:`~federation.models.machine.Machine`), then each component's parameters are validated by
the ``Params`` model of the plugin that provides its ``kind``.  Every error names the file and
the field path, e.g. ``machine.yaml: topology.p: Input should be greater than or equal to 1``.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from federation.engine.link_series import (
    INTERVAL_FIELD,
    MAX_LINK_SAMPLES,
    samples,
    shortest_interval,
)
from federation.errors import ConfigError, os_reason
from federation.models.base import read_document, validate_model
from federation.models.experiment import Experiment
from federation.models.limits import MAX_SWEEP_POINTS
from federation.models.machine import ComponentSpec, Machine
from federation.models.units import PS_PER_S, format_rate, format_time, seconds_to_ps
from federation.pipeline.mode_rules import (
    MAX_LISTED,
    unreached_collective,
    unreached_message,
)
from federation.pipeline.overrides import (  # noqa: F401 - parse_override, set_path: public here too
    Assigner,
    Override,
    apply_sweep_overrides,
    blame,
    check_conflicts,
    dotted,
    drop_overridden_axes,
    listed_problems,
    parse_override,
    positional,
    set_path,
)
from federation.pipeline.points import (
    LoadedExperiment,
    ResolvedJob,
    ResolvedMachine,
    ResolvedPoint,
    experiment_field,
    known_length_ps,
    known_link_classes,
    link_figure,
    point_jobs,
    sweep_entry,
    sweep_label,
    swept_message,
)
from federation.plugin.components import Workload
from federation.plugin.registry import (
    ComponentRegistry,
    FederationPlugins,
    get_plugins,
    plugins_in_use,
)
from federation.schemas import quickstart_path


def resolve_component(spec: ComponentSpec, registry: ComponentRegistry[Any], source: str,
                      path: str) -> Any:
    """Instantiate the plugin component named by ``spec`` with its validated parameters."""
    try:
        cls = registry.get(spec.kind)
    except KeyError as exc:
        key = spec.component_key
        raise ConfigError(exc.args[0], source=source, path=f"{path}.{key}") from None
    params = spec.params if isinstance(spec.params, cls.Params) else validate_model(
        cls.Params, spec.params, source, prefix=path
    )
    try:
        return cls(params)
    except ConfigError as exc:  # a nested component (synthetic's pattern): relative paths
        if exc.source is not None:
            raise
        where = f"{path}.{exc.path}" if exc.path else path
        raise ConfigError(exc.message, source=source, path=where) from None


def resolve_machine(machine: Machine, source: str, plugins: FederationPlugins,
                    prefix: str = "") -> ResolvedMachine:
    pre = f"{prefix}." if prefix else ""
    topo = resolve_component(machine.topology, plugins.topologies, source, f"{pre}topology")
    qos = resolve_component(machine.qos, plugins.qos, source, f"{pre}qos")
    arbiter = resolve_component(machine.router.arbiter, plugins.arbiters, source,
                                f"{pre}router.arbiter")
    as_arbiter = getattr(qos, "as_arbiter", None)
    if as_arbiter is not None:  # a QoS policy that arbitrates the output ports itself
        kind = machine.router.arbiter.kind
        if kind != "oldest_first":
            raise ConfigError(
                f"QoS policy {qos.name!r} arbitrates the routers' output ports itself, so "
                f"router.arbiter {kind!r} cannot apply; remove router.arbiter (or use "
                "qos: {kind: none})", source=source, path=f"{pre}router.arbiter")
        arbiter = as_arbiter()
    known = set(topo.link_defaults) | {"terminal"}
    if topo.link_defaults:
        for name in machine.links:
            if name not in known:
                raise ConfigError(
                    f"topology {topo.name!r} has no link class {name!r} "
                    f"(it has: {', '.join(sorted(known))})",
                    source=source, path=f"{pre}links.{name}",
                )
    return ResolvedMachine(machine, source, topo, qos, arbiter)


def load_machine(path: str | Path, plugins: FederationPlugins | None = None,
                 overrides: list[str] | None = None) -> ResolvedMachine:
    """Load and fully validate a machine file, with ``--set`` ``overrides`` of its fields
    (``router.vcs=4``: the machine's own keys) applied first."""
    plugins = plugins or get_plugins()
    doc = read_document(path)
    refuse_results(doc, str(path))
    sets = [parse_override(o) for o in overrides or []]
    if not sets:
        return resolve_machine(validate_model(Machine, doc, str(path)), str(path), plugins)
    check_conflicts(sets, doc)
    swept = next((o for o in sets if o.axis is not None or o.key == "sweep"), None)
    if swept is not None:
        raise ConfigError("a machine file has no sweep: --set gives its fields "
                          "(router.vcs=4)", source=str(swept))
    whole = copy.deepcopy(doc)  # the keys as an experiment's are set: shallowest first
    Assigner(Path(path).parent).assign(whole, [(o.key, o.value) for o in sets], "--set")
    try:
        return resolve_machine(validate_model(Machine, whole, str(path)), str(path), plugins)
    except ConfigError as exc:
        raise blame(exc, sets, str(path), doc) from None


def refuse_results(doc: dict[str, Any], source: str) -> None:
    """Refuse a run's ``results.json`` given where an experiment or machine is read, in one
    line: read as either, it was fifteen lines of schema errors ("the file says 6")."""
    if doc.get("schema_name") == "hpc-federation.results":
        raise ConfigError("is a federation run's results document, not an experiment or a "
                          "machine: each point's complete experiment is its "
                          "points[i].resolved, which runs as it is", source=source)


def is_machine_document(doc: dict[str, Any]) -> bool:
    return "topology" in doc and "machine" not in doc


def load_experiment(path: str | Path | None = None, overrides: list[str] | None = None,
                    plugins: FederationPlugins | None = None,
                    document: dict[str, Any] | None = None) -> LoadedExperiment:
    """Load an experiment file (default: the shipped quickstart), apply ``--set`` overrides and
    resolve every sweep point (how overrides meet the sweep:
    :mod:`federation.pipeline.overrides`).

    ``document`` is an experiment held inside another file (a validation suite's inline
    scenario), loaded as if it were the file ``path``, which need not exist: errors name
    ``path``, and every relative path in it (``machine``, each ``DocumentPath`` however deep,
    also where a sweep or an override sets it) is resolved against ``path``'s folder by the
    very code that resolves a file's.  Writing it to a file elsewhere would make them relative
    to that folder instead."""
    given = plugins  # kept on the result (None: the process-wide manager of the time)
    plugins = plugins or get_plugins()
    if document is not None and path is None:
        raise ValueError("an experiment given as a document needs the path that names it")
    p = Path(path) if path is not None else quickstart_path()
    source = str(p)
    doc = read_document(p) if document is None else copy.deepcopy(document)
    refuse_results(doc, source)
    if is_machine_document(doc):
        raise ConfigError(
            "this is a machine file; an experiment needs 'machine:' (a path or inline) "
            "plus routing and workload. Use 'federation validate' or 'federation topology' "
            "for machine files",
            source=source,
        )
    sets = [parse_override(o) for o in overrides or []]
    check_conflicts(sets, doc)
    try:
        with plugins_in_use(plugins):  # nested components come from it too
            loaded = _load(doc, p, sets, plugins)
    except ConfigError as exc:
        raise blame(exc, sets, source, doc) from None
    return replace(loaded, plugins=given)


def _load(doc: dict[str, Any], p: Path, sets: list[Override],
          plugins: FederationPlugins) -> LoadedExperiment:
    source = str(p)
    fields = [o for o in sets if o.key != "sweep" and o.axis is None]
    given = apply_sweep_overrides(doc, sets)
    notes = drop_overridden_axes(doc, fields, given, source,
                                 [o for o in sets if o.key == "sweep" or o.axis is not None])
    assigner = Assigner(p.parent)
    base_doc = {k: v for k, v in doc.items() if k != "sweep"}
    whole = copy.deepcopy(doc)
    machine_source = assigner.assign(whole, [(o.key, o.value) for o in fields], "--set")
    experiment = _validate(whole, source, machine_source)
    points: list[ResolvedPoint] = []
    keys = list(experiment.sweep)
    _check_sweep_size(experiment, source)
    _check_no_nested_sweep(experiment, source)
    combos = list(itertools.product(*(experiment.sweep[k] for k in keys))) if keys else [()]
    overridden = tuple(positional(dotted(o.key), doc) for o in fields)
    for i, combo in enumerate(combos):
        pdoc = copy.deepcopy(base_doc)
        sweep = dict(zip(keys, combo, strict=True))
        items = [(k, v) for k, v in sweep.items()] + [(o.key, o.value) for o in fields]
        machine_source = assigner.assign(pdoc, items, f"{source}: sweep")
        at = SweepPoint(doc, sweep, i, len(combos), source, machine_source, overridden)
        try:
            exp = _validate(pdoc, source, machine_source)
        except ConfigError as exc:
            raise at.blame(exc) from None
        _check_per_experiment(experiment, exp, sweep, source)
        try:
            points.append(replace(_resolve_point(exp, source, p.parent, plugins, sweep,
                                                 machine_source), overridden=overridden))
        except ConfigError as exc:
            raise at.blame(exc) from None
        _check_link_samples(points[-1])
    _check_collective_modes(points)
    notes += _unused_stop(points)
    notes += _iq_cycle_notes(points)
    return LoadedExperiment(experiment, source, points, notes, sets, doc)


@dataclass(frozen=True)
class SweepPoint:
    """Point ``index`` of ``count`` of a file's sweep, to blame for a refusal of its
    experiment: the static models' and the plugins' checks see the point's document, where
    a swept value sits at its field (``workload.load``), so their errors would send the user
    to a field that is fine in the file."""

    doc: dict[str, Any]  #: the file as read (list items named in an axis found by position)
    sweep: dict[str, Any]
    index: int
    count: int
    source: str
    machine_source: str | None  #: the machine file inlined into this point, if one was
    overridden: tuple[str, ...] = ()  #: the fields --set gave (ResolvedPoint.overridden)

    def blame(self, exc: ConfigError) -> ConfigError:
        """``exc`` naming ``sweep.AXIS`` for a value the sweep gave (each problem of an error
        listing several) and, when the sweep has several points, which one, as the checks
        after loading do (:func:`~federation.pipeline.points.in_point`):
        ``e.yaml: sweep.workload.load: Input should be greater than 0 (sweep point 1:
        workload.load=-1)``.  The point is named when the sweep is to blame: a swept field,
        or any field after the first point (which passed with the same file); a refusal of
        the first point's own fields is the file's, as without a sweep."""
        source = exc.source or self.source
        problems = listed_problems(exc)
        if problems is None:
            where, path, message = self._where(source, exc.path, exc.message)
            label = self._label(path != exc.path)
            return ConfigError(message + label, source=where, path=path)
        located = [self._where(source, path, msg) for path, msg in problems]
        label = self._label(any(path != old for (_, path, _), (old, _)
                                in zip(located, problems, strict=True)))
        if all(where == source for where, _, _ in located) and source != self.source:
            return ConfigError(exc.message + label, source=source)
        lines = [f"{path}: {msg}" if where == self.source else f"{where}: {path}: {msg}"
                 for where, path, msg in located]
        return ConfigError("\n  " + "\n  ".join(lines) + label, source=self.source)

    def _label(self, swept: bool) -> str:
        if self.count == 1 or not (swept or self.index > 0):
            return ""
        return f" (sweep point {self.index}: {sweep_label(self.sweep)})"

    def _where(self, source: str, path: str | None,
               message: str) -> tuple[str, str | None, str]:
        """The file, field and message of a refusal of ``path`` of ``source``: the sweep
        entry that gave the value (or an ancestor of it), else ``path`` itself."""
        if not path:
            return source, path, message
        inlined = self.machine_source is not None and source == self.machine_source
        if source != self.source and not inlined:
            return source, path, message
        own = f"machine.{path}" if inlined else path
        full = dotted(own)
        axes = {positional(dotted(a), self.doc): a for a in self.sweep}  # jobs by position
        entry = sweep_entry(axes, full, overridden=self.overridden)
        if entry is not None:
            key = entry.removeprefix("sweep.")
            return self.source, f"sweep.{axes[key]}", (
                message if full == key else f"{own}: {message}")
        for key, axis in axes.items():  # an axis below the refused field made it (a parent)
            if key.startswith(full + ".") \
                    and not any(k.startswith(full + ".") for k in self.overridden):
                return self.source, f"sweep.{axis}", f"{own}: {message}"
        return source, path, message


#: fields an experiment has once, whatever its points, and why: the run writes every point
#: into one folder in one format (:func:`federation.pipeline.run.run_experiment` reads them from
#: the experiment, never from a point).  A sweep that changed them would be recorded in each
#: point's ``resolved`` document but never applied, so it is refused.
PER_EXPERIMENT: dict[str, str] = {
    "outputs.format": "an experiment's outputs are the same for every point (all its tables "
                      "are written in one format)",
    "outputs.dir": "an experiment's outputs are the same for every point (all of them are "
                   "written into one folder)",
    "name": "an experiment's name is the same for every point (it names the one output "
            "folder, and results.json's experiment)",
}


def _check_no_nested_sweep(experiment: Experiment, source: str) -> None:
    """Refuse an axis that sweeps ``sweep`` itself: a point's own ``sweep`` would never be
    expanded (an experiment has one sweep), only recorded."""
    for axis in experiment.sweep:
        if axis == "sweep" or axis.startswith("sweep."):
            raise ConfigError(
                "an experiment has one sweep, so a point cannot have its own: put every axis "
                "directly under the file's sweep (e.g. sweep: {workload.load: [0.1, 0.5], "
                "seed: [1, 2]})", source=source, path=f"sweep.{axis}")


def _check_per_experiment(experiment: Experiment, point: Experiment, sweep: dict[str, Any],
                          source: str) -> None:
    """Refuse a sweep point whose :data:`PER_EXPERIMENT` fields differ from the experiment's.

    Compared by value, not by axis name, so that an axis over an ancestor is caught too:
    ``sweep: {outputs: [{packets: false}]}`` resets ``outputs.format`` to its default in every
    point, which the run would not follow either.  An axis that gives the experiment's own
    value changes nothing and passes."""
    for field, why in PER_EXPERIMENT.items():
        ours, theirs = _field(experiment, field), _field(point, field)
        if ours == theirs:
            continue
        raise ConfigError(
            f"{field} cannot be swept: {why}, so every point would get the experiment's "
            f"{field} ({_shown(ours)}), not the swept {_shown(theirs)}; set {field} outside "
            "the sweep, or run one experiment per value", source=source,
            path=sweep_entry(sweep, field) or "sweep")


def _field(exp: Experiment, dotted: str) -> Any:
    cur: Any = exp
    for part in dotted.split("."):
        cur = getattr(cur, part)
    return cur


def _shown(value: Any) -> str:
    return "not set" if value is None else str(value)


def _check_link_samples(point: ResolvedPoint) -> None:
    """Refuse an ``outputs.link_series.interval`` that would take more than
    :data:`~federation.engine.link_series.MAX_LINK_SAMPLES` samples over the part of the run
    the stop rule gives the length of (:func:`~federation.pipeline.points.known_length_ps`:
    ``stop.warmup + stop.measure``, every job open loop).  The drain after it is sampled
    while the limit allows, then as one interval, so such a run is never refused once it
    started; rank programs and ``stop.messages`` end when they end, and the sampler refuses
    those runs at the limit."""
    spec = point.experiment.outputs.link_series
    run = known_length_ps(point)
    if spec is None or run is None:
        return
    interval = seconds_to_ps(spec.interval)
    n = samples(run, interval)
    if n <= MAX_LINK_SAMPLES:
        return
    raise ConfigError(
        f"{format_time(spec.interval)} samples every port {n} times in the "
        f"{format_time(run / 1e12)} of stop.warmup + stop.measure, more than the limit of "
        f"{MAX_LINK_SAMPLES} a run may take (each sample stops the engine to read every "
        f"port's counters); give an interval of at least {shortest_interval(run)}",
        source=point.source, path=experiment_field(point, INTERVAL_FIELD))


def _check_collective_modes(points: list[ResolvedPoint]) -> None:
    """Refuse an entry of the experiment's ``collective_modes`` that no point of the sweep
    runs: the entries are defaults for every point, so the preflight's check of one point
    (``routing_modes.check_routing_modes``) passes a point without the collective when its
    sweep varies the workloads, as another point may run it; only here are all the points
    known.  Without this, ``sweep: {workload: [allreduce, barrier]}`` beside ``{alltoall:
    ADAPTIVE_1}`` ran, the mode marking no message.

    One point is left to the preflight, which says the same, after the checks it makes
    first; so is an entry that names no collective or no mode of the routing (it refuses
    the name).  Points that give the same reasons are one group; when every point gives the
    same, the refusal is worded as for one point."""
    if len(points) < 2:
        return
    from federation.programs.collectives import ALGORITHMS

    source = points[0].source
    for op in dict.fromkeys(op for p in points for op in p.experiment.collective_modes):
        having = [(i, p) for i, p in enumerate(points) if op in p.experiment.collective_modes]
        if op not in ALGORITHMS or any(p.experiment.collective_modes[op]
                                       not in p.routing.modes() for _, p in having):
            continue
        groups: dict[tuple[str, ...], list[int]] = {}
        rule = False
        for i, p in having:
            found = unreached_collective(p, op)
            if found is None:
                break
            groups.setdefault(tuple(found[0]), []).append(i)
            rule = rule or found[1]
        else:
            field = f"collective_modes.{op}"
            path = sweep_entry(points[0].sweep, field) or field
            if len(groups) == 1:
                message = unreached_message(op, "; ".join(next(iter(groups))), rule)
            else:
                message = unreached_message(op, _point_groups(groups), rule,
                                            f" in any of the sweep's {len(points)} points")
            if path != field:
                message = swept_message(path, field, message)
            raise ConfigError(message, source=source, path=path)


def _point_groups(groups: dict[tuple[str, ...], list[int]]) -> str:
    """``sweep point 0: job 'a' runs allreduce; sweep points 1, 2: ...``: each group of
    points with the reasons its jobs give, the groups past
    :data:`~federation.pipeline.mode_rules.MAX_LISTED` counted."""
    parts = [f"sweep point{'s' if len(ix) > 1 else ''} {_runs(ix)}: {', '.join(why)}"
             for why, ix in groups.items()]
    if len(parts) > MAX_LISTED:
        rest = sum(len(ix) for ix in list(groups.values())[MAX_LISTED:])
        parts[MAX_LISTED:] = [f"{rest} more points"]
    return "; ".join(parts)


def _runs(indices: list[int]) -> str:
    """``0, 2, 4 to 9``: ascending point indices, each run of consecutive ones as its ends."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1][1:] = [i]
        else:
            runs.append([i])
    return ", ".join(" to ".join(map(str, r)) for r in runs)


def _unused_stop(points: list[ResolvedPoint]) -> list[str]:
    """A note when the file sets ``stop.warmup`` or ``stop.measure`` where every job is rank
    programs (no background, no open-loop job): the programs run until they finish and the
    whole run is measured, so those fields change nothing (``stop.messages`` is refused by
    the preflight instead)."""
    closed = [i for i, point in enumerate(points)
              if all(job.workload.closed_loop for job in point_jobs(point))]
    fields = sorted({f"stop.{name}" for i in closed for name in ("warmup", "measure")
                     if name in points[i].experiment.stop.model_fields_set
                     or f"stop.{name}" in points[i].sweep})
    if not fields:
        return []
    where = "here" if len(closed) == len(points) else (  # a sweep of both kinds: which points
        f"at point{'s' if len(closed) > 1 else ''} {', '.join(map(str, closed))} (the "
        "open-loop points use them)")
    return [f"{' and '.join(fields)} change nothing {where}: rank programs run until they "
            "finish and the whole run is measured (the stop rule gives a background's horizon)"]


def _iq_cycle_notes(points: list[ResolvedPoint]) -> list[str]:
    """A note per link class (and packet size) that ``router.model: booksim_iq`` runs below
    its bandwidth: its links send one packet per whole cycles
    (:func:`federation.engine.iq.flits`: the packet's whole-picosecond serialisation over the
    cycle, rounded up), so a link whose packet time is not a whole number of cycles idles the
    rest of the last one.  The default cycle is one ``packet_size`` packet on the fastest link
    (the engine's :func:`~federation.engine.iq.default_cycle`), whatever the messages: a
    4.7 GiB/s link beside 5.25 GiB/s ones carries half a packet a cycle, and synthetic
    messages shorter than a packet carry their share of a cycle (docs/architecture.md)."""
    notes: dict[str, None] = {}
    for point in points:
        machine = point.machine.machine
        if machine.router.model != "booksim_iq":
            continue
        topo, packet = point.machine.topology, int(machine.packet_size)
        sizes = {packet} | {min(int(j.workload.params.message_size or packet), packet)
                            for j in point_jobs(point) if j.workload.name == "synthetic"}
        bw = {c: link_figure(machine, topo, c, "bandwidth")[0]
              for c in known_link_classes(point)}
        bw["NIC"] = float(machine.nic.bandwidth or bw["terminal"])
        per_byte = {c: PS_PER_S / b for c, b in bw.items()}  # as the engine computes them
        if machine.router.cycle:
            cycle = round(float(machine.router.cycle) * PS_PER_S)
        else:  # the engine's own rule, imported only for a booksim_iq point
            import numpy as np

            from federation.engine.iq import default_cycle

            cycle = round(default_cycle(np.array(list(per_byte.values())), packet))
        if cycle < 1:  # a default cycle below the engine's picosecond: refused at preflight
            continue
        for size in sorted(sizes, reverse=True):
            for cls, ps in per_byte.items():
                ser = int(size * ps + 0.5)
                cycles = max(-(-ser // cycle), 1)
                if ser >= 0.99 * cycles * cycle:
                    continue
                what = "the NICs" if cls == "NIC" else f"links of class {cls!r}"
                advice = ("give router.cycle a common divisor of the links' packet times to "
                          "keep their ratio" if size == packet else
                          f"its messages are shorter than packet_size {packet} B, whose time "
                          "sets the default cycle: set router.cycle (or packet_size) for them")
                notes[f"router.model booksim_iq: {what} ({format_rate(bw[cls])}) hold a "
                      f"{size} B packet {cycles} cycle(s) of {cycle} ps for {ser} ps of data, "
                      f"so they carry {ser / (cycles * cycle):.0%} of their bandwidth; "
                      f"{advice}"] = None
    return list(notes)


def _validate(doc: dict[str, Any], source: str, machine_source: str | None) -> Experiment:
    """The experiment model of ``doc``; an error inside a machine that was inlined from a file
    (for an override or a sweep) names that file and the field in it, as loading the file
    itself would."""
    try:
        return validate_model(Experiment, doc, source)
    except ConfigError as exc:
        if machine_source and exc.source == source and (exc.path or "").startswith("machine."):
            raise ConfigError(exc.message, source=machine_source,
                              path=exc.path[len("machine."):]) from None
        raise


def _check_sweep_size(experiment: Experiment, source: str) -> None:
    """Refuse a sweep whose combinations exceed :data:`MAX_SWEEP_POINTS` before expanding it."""
    n = math.prod(len(v) for v in experiment.sweep.values())
    if n > MAX_SWEEP_POINTS:
        sizes = " x ".join(f"{len(v)} ({k})" for k, v in experiment.sweep.items())
        raise ConfigError(
            f"{sizes} = {n} points, more than the {MAX_SWEEP_POINTS} one experiment may run; "
            "split it into several experiments or sweep fewer values", source=source,
            path="sweep")


def _machine_path(name: str, base: Path, source: str) -> Path:
    """The machine file an experiment's ``machine: <path>`` names, or a refusal naming the
    experiment's ``machine`` field (the path is the user's value there, not a file they gave
    on the command line): a folder, a device or pipe, a name the system refuses."""
    mpath = base / name if not Path(name).is_absolute() else Path(name)
    why = None
    try:
        if not name.strip() or mpath.is_dir():
            why = "is not a machine file (a path to a YAML or JSON file, or an inline mapping)"
        elif not mpath.exists():
            raise ConfigError(f"machine file {name!r} not found (looked at {mpath})",
                              source=source, path="machine")
        elif not mpath.is_file():
            why = "is not a regular file (a pipe, device or socket), expected a YAML or JSON file"
    except OSError as exc:  # a name too long for the file system, a loop of links
        why = f"cannot be opened: {os_reason(exc)}"
    if why:
        raise ConfigError(f"{name!r} {why}", source=source, path="machine")
    return mpath


def _resolve_point(exp: Experiment, source: str, base: Path, plugins: FederationPlugins,
                   sweep: dict[str, Any], machine_source: str | None) -> ResolvedPoint:
    if isinstance(exp.machine, str):
        rm = load_machine(_machine_path(exp.machine, base, source), plugins)
    else:
        msrc = machine_source or source
        prefix = "" if machine_source else "machine"
        rm = resolve_machine(exp.machine, msrc, plugins, prefix=prefix)
    routing = resolve_component(exp.routing, plugins.routings, source, "routing")
    engine = resolve_component(exp.engine, plugins.engines, source, "engine")
    ctl = (resolve_component(exp.routing_controller, plugins.controllers, source,
                             "routing_controller")
           if exp.routing_controller is not None else None)
    if exp.jobs is not None:
        jobs = resolve_jobs(exp, plugins, source)
        return ResolvedPoint(exp, source, rm, routing, jobs[0].workload, engine, sweep, None,
                             jobs, controller=ctl)
    workload = resolve_component(exp.workload, plugins.workloads, source, "workload")
    background = resolve_background(exp, workload, plugins, source)
    return ResolvedPoint(exp, source, rm, routing, workload, engine, sweep, background,
                         controller=ctl)


def resolve_jobs(exp: Experiment, plugins: FederationPlugins,
                 source: str) -> tuple[ResolvedJob, ...]:
    """The ``jobs`` of ``exp``, each component resolved; names must differ, ``workload`` and
    ``background`` must not be given beside them (they are the one-job form), and the
    statically visible conflicts between jobs are refused here, before any machine is built
    (:func:`check_jobs_static`)."""
    given = exp.model_fields_set
    for old in ("workload", "background"):
        if old in given:
            raise ConfigError(f"give either 'jobs' or '{old}' (one job is the old form: move "
                              f"'{old}' into a job)", source=source, path=old)
    jobs = []
    seen: dict[str, int] = {}
    for i, job in enumerate(exp.jobs or []):
        at = f"jobs[{i}]"
        if job.name in seen:
            raise ConfigError(f"{job.name!r} is also the name of jobs[{seen[job.name]}]; each "
                              "job needs its own name", source=source, path=f"{at}.name")
        seen[job.name] = i
        workload = resolve_component(job.workload, plugins.workloads, source,
                                     f"{at}.workload")
        placement = resolve_component(job.placement, plugins.placements, source,
                                      f"{at}.placement")
        start = seconds_to_ps(job.start)  # a ClockTime: below the clock range
        jobs.append(ResolvedJob(job.name, i, workload, placement, job.ranks, start, job.shared,
                                at, f"{at}.workload"))
    return tuple(jobs)


def resolve_background(exp: Experiment, workload: Workload, plugins: FederationPlugins,
                       source: str) -> Workload | None:
    """The ``background`` workload, refused where it has no meaning.

    Background traffic exists to load the network while rank programs run, so it needs a
    closed-loop ``workload`` (an open-loop one would simply be more traffic of the same kind:
    it belongs in ``workload``), must itself be open loop (two sets of rank programs would be
    one program set), and needs ``stop.measure``: it is generated up to ``stop.warmup +
    stop.measure`` because the programs' completion time is unknown before the run.  These
    are static facts of the file, checked here so every sweep point is refused before any
    runs."""
    if exp.background is None:
        return None
    if not workload.closed_loop:
        raise ConfigError(
            f"background traffic runs beside rank programs, but workload {workload.name!r} is "
            "open loop; put all open-loop traffic in 'workload', or make the workload rank "
            "programs (e.g. pingpong, allreduce, halo3d, program)", source=source,
            path="background")
    background = resolve_component(exp.background, plugins.workloads, source, "background")
    if background.closed_loop:
        raise ConfigError(
            f"background {background.name!r} is rank programs (closed loop); background must "
            "be open-loop traffic (e.g. synthetic, messages); put rank programs in 'workload'",
            source=source, path="background.kind")
    if exp.stop.measure is None:
        raise ConfigError(
            "background traffic needs a horizon: it is generated over stop.warmup + "
            "stop.measure, because when the rank programs finish is unknown before the run; "
            "give stop.measure (a time) instead of stop.messages", source=source,
            path="stop.measure")
    return background
