"""``federation validate``, ``schema`` and ``plugins``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from federation.cli.app import app, out_path
from federation.cli.run import NO_DEADLOCK_CHECK_HELP, MaxMemory

if TYPE_CHECKING:
    from federation.network import Network
    from federation.pipeline.points import ResolvedMachine


@app.command()
def validate(
    file: Annotated[Path, typer.Argument(help="machine or experiment file")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a field")] = None,
    max_memory: MaxMemory = None,
    no_deadlock_check: Annotated[bool, typer.Option(
        "--no-deadlock-check", help=NO_DEADLOCK_CHECK_HELP)] = False,
) -> None:
    """Check a machine or experiment file without running it: every sweep point's fields,
    engine limits, memory estimate, network and routing (its VC needs, and the proof that it
    cannot deadlock: a cycle of channels is refused and printed)."""
    from federation.cli.run import memory_limit, output_folder
    from federation.models.base import read_document
    from federation.pipeline.load import is_machine_document, load_experiment, load_machine
    from federation.pipeline.point import preflight
    from federation.results.destinations import check_out_folder

    limit = memory_limit(max_memory)
    doc = read_document(file)
    if is_machine_document(doc):
        rm = load_machine(file, overrides=set_ or [])
        net = checked_machine_network(rm, limit)
        print(f"{file}: valid machine ({rm.topology.name}: {net.n_routers} routers, "
              f"{net.n_nodes} nodes, {net.n_links} cables)")
        return
    loaded = load_experiment(file, set_ or [], document=doc)  # read once (a long messages:
    # list takes seconds)
    # the folder run would write by default (name, outputs.dir): run refuses a file there
    check_out_folder(*output_folder(loaded, None, "validate"))
    cache = preflight(loaded, limit, deadlock_check=not no_deadlock_check)
    loaded.print_notes()  # after the checks: a refusal stays one line
    print(f"{file}: valid experiment ({len(loaded.points)} point(s))")
    for routing, proof in cache.proofs.values():
        print(f"  deadlock-free: routing {routing!r}: {proof.describe()}")


def checked_machine_network(rm: ResolvedMachine, limit: int) -> Network:
    """Build a machine file's network after the memory check its topology's counts allow, and
    check its link classes (each named in ``links`` the network's, each buffer at least a
    packet) and its figures against the engine's clock, as ``run`` does.  A sliding QoS
    window's rings are counted for packets of ``packet_size``: a machine file names no
    workload (an experiment's point counts its workloads' smallest packet)."""
    from federation.errors import ConfigError
    from federation.pipeline.bounds import (
        check_machine_memory,
        check_network_memory,
        machine_clock,
    )
    from federation.pipeline.build import checked_network, resolve_links

    known = check_machine_memory(rm, limit)
    net = checked_network(rm)  # as run checks it: a plugin's malformed network is refused
    if known is None:  # counted once built, with a sliding QoS window's rings on its ports
        check_network_memory(net, rm.machine.router.vcs, limit, rm.source, "topology",
                             machine=rm, prefix="")
    # its link classes and figures, as run checks them (the stop window is the experiment's)
    resolve_links(rm.machine, rm.topology, net, rm.source)
    machine_clock(rm, list(net.link_classes),
                  lambda field, why: ConfigError(why, source=rm.source, path=field))
    return net


@app.command()
def schema(
    out: Annotated[str | None, typer.Option(  # text: see app.out_path
        "--out", metavar="DIR",
        help="folder for machine.schema.json and experiment.schema.json (made if missing; "
        "files of these names in it are replaced)")] = None,
) -> None:
    """Write the JSON Schema of machine and experiment files for the plugins installed now:
    both files or neither (a refusal leaves no new schema beside a stale one)."""
    from federation.errors import ConfigError, os_reason
    from federation.plugin.jsonschema import experiment_schema, machine_schema
    from federation.plugin.registry import get_plugins
    from federation.results.outputs import OutputFiles, check_out_path

    folder = out_path(out, "the folder to write the schema files into")
    if folder is not None:  # the destination first: usage before the plugins are loaded
        check_out_path(folder, "--out")
    plugins = get_plugins()
    docs = {"machine.schema.json": machine_schema(plugins),
            "experiment.schema.json": experiment_schema(plugins)}
    if folder is None:
        print(json.dumps({"machine": docs["machine.schema.json"],
                          "experiment": docs["experiment.schema.json"]}, indent=2))
        return
    # both made in a temporary folder inside --out and moved in only when neither name is a
    # folder (OutputFiles.commit); overwrite: the files are regenerated, so files of these
    # names are replaced
    with OutputFiles(folder, source="--out", overwrite=True, what="schema files") as target:
        try:
            for name, d in docs.items():
                (target.tmp / name).write_text(json.dumps(d, indent=2, sort_keys=True) + "\n",
                                               encoding="utf-8")
        except OSError as exc:  # a full disk, a quota
            raise ConfigError(f"cannot write the schema files in {folder}: {os_reason(exc)}",
                              source="--out") from None
        target.commit()
    for name in docs:
        print(folder / name)


@app.command()
def plugins(
    as_json: Annotated[bool, typer.Option("--json/--text", help="JSON (default) or text")] = True,
) -> None:
    """List loaded plugins, where each came from and the components it provides."""
    from federation.plugin.registry import get_plugins

    listing = get_plugins().listing()
    if as_json:
        print(json.dumps(listing, indent=2))
        return
    # columns as wide as their longest entry: a fixed width let a long name (a plugin's
    # entry-point name is free) push its row out of line
    name_w = max((len(p["name"]) for p in listing), default=0)
    source_w = max((len(p["source"]) for p in listing), default=0)
    for p in listing:
        provides = "; ".join(f"{k}: {', '.join(v)}" for k, v in p["provides"].items())
        print(f"{p['name']:<{name_w}}  {p['source']:<{source_w}}  {provides}".rstrip())
