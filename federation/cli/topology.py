"""``federation topology``: build and validate a machine's network, print its exact metrics.

Only the network: for an experiment file its machine is built and checked as ``run`` builds it,
but nothing else of the experiment (routing VC needs, QoS, workload, stop) is; the summary says
so, since ``federation validate`` is the command that checks an experiment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from federation.cli.app import app
from federation.cli.run import MaxMemory


@app.command()
def topology(
    file: Annotated[Path, typer.Argument(
        help="machine file, or an experiment file (its machine is used)")],
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON object")] = False,
    max_memory: MaxMemory = None,
) -> None:
    """Build and validate a machine's network; print routers, nodes, links per class, port
    use, diameter, average shortest path length and the Moore bound (exact).  Only the
    network is checked: `federation validate` checks an experiment."""
    from federation.cli.run import memory_limit
    from federation.errors import TopologyError
    from federation.models.base import read_document
    from federation.network.metrics import topology_metrics
    from federation.pipeline.load import is_machine_document, load_experiment, load_machine

    limit = memory_limit(max_memory)  # usage before the file is read
    doc = read_document(file)
    machine_file = is_machine_document(doc)
    note = None
    if machine_file:
        rm = load_machine(file)
    else:
        loaded = load_experiment(file, document=doc)  # read once
        rm = loaded.points[0].machine
        if len(loaded.points) > 1 and any(
                k.startswith("machine.") for k in loaded.points[0].sweep):
            note = "the sweep changes the machine: showing its first point"
    from federation.cli.inspect import checked_machine_network

    try:
        net = checked_machine_network(rm, limit)
        m = topology_metrics(net)
    except TopologyError as exc:
        raise TopologyError(f"{rm.source}: {exc}") from None
    head = {
        "source": str(file),
        "machine": rm.machine.name,
        "topology": rm.machine.topology.model_dump(mode="json"),
    }
    if as_json:
        out = {**head, **m.to_dict(), "info": _plain(net.info)}
        if note:
            out["note"] = note
        print(json.dumps(out, indent=2))
        return
    print(format_metrics(head, m, note, experiment=not machine_file,
                         tiles=net.info.get("tiles_per_router")))


def format_metrics(head: dict[str, Any], m: Any, note: str | None = None,
                   experiment: bool = False, tiles: int | None = None) -> str:
    """The readable summary (``m`` is a :class:`~federation.network.metrics.TopologyMetrics`).

    Its first line says "network valid", never a bare "valid": for an experiment file
    (``experiment``) only its machine's network was checked, and a run may still be refused
    (routing VCs, QoS, workload), so it points at ``federation validate``."""
    topo = dict(head["topology"])
    kind = topo.pop("kind", "?")
    params = ", ".join(f"{k}={v}" for k, v in topo.items())
    name = f"{head['machine']}: " if head.get("machine") else ""
    cls = ", ".join(f"{v} {k}" for k, v in m.links.items())
    groups = f" in {m.groups} groups" if m.groups < m.routers else ""
    rows = [
        ("routers", f"{m.routers}{groups}"),
        ("nodes", f"{m.nodes} ({m.nodes_per_router} per router)"),
        ("links", f"{cls} ({m.cables} router-router cables"
                  + (f", {m.parallel_cables} parallel" if m.parallel_cables else "") + ")"),
        ("radix", f"{m.radix} (ports used {m.ports_used}, free {m.free_ports})" if tiles is None
         else f"{m.radix} tiles ({tiles} used; their bundles make {m.ports_used} cable ports)"),
        ("degree", f"{m.cable_degree} cables, {m.neighbours} distinct neighbours per router"),
        ("diameter", f"{m.diameter} router hops"
                     + (f" (Moore bound {m.moore_diameter})"
                        if m.moore_diameter is not None else "")),
        ("ASPL", f"{m.aspl:.4f} router hops over {m.routers * (m.routers - 1)} ordered pairs"
                 + (f" (Moore bound {m.moore_aspl:.4f})" if m.moore_aspl is not None else "")),
        ("node pairs", f"mean {m.node_mean_hops:.4f} router hops, max {m.node_diameter} "
                       "(uniform traffic on shortest paths; `federation hops` follows the "
                       "routing's)"),
    ]
    if len(m.hop_histogram) <= 17:
        rows.append(("hops", "  ".join(f"{k}:{v}" for k, v in enumerate(m.hop_histogram)
                                       if k > 0) + " (ordered router pairs)"))
    width = max(len(k) for k, _ in rows)
    verdict = " -- network valid" + (
        " (`federation validate` checks the experiment)" if experiment else "")
    lines = [f"{head['source']}: {name}{kind}" + (f" ({params})" if params else "") + verdict]
    if note:
        lines.append(f"note: {note}")
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    return "\n".join(lines)


def _plain(x: Any) -> Any:
    """``Network.info`` as JSON-ready values (NumPy scalars and arrays converted)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if hasattr(x, "tolist"):
        return x.tolist()
    if x is None or isinstance(x, bool | int | float | str):
        return x
    return str(x)
