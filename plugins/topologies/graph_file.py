"""Topology ``graph_file``: any router graph read from a file.

Parameters:

* ``path``: the file.  A relative path is taken relative to the file that names it (the
  machine file, or the experiment file for an inline machine), wherever the run starts;
* ``nodes_per_router``: nodes attached to every router; overrides the file's value; default
  the file's value, else 1.

Two formats, chosen by the file name (``.json`` is JSON, anything else an edge list):

**Edge list** (text): one cable per line, ``a b [class]``, routers numbered from 0; the router
count is the largest id + 1.  ``#`` starts a comment (whole line or end of line); blank lines
are ignored.  A line repeated gives parallel cables.  Without a class the cable has class
``link``.  Example::

    # a 4-ring with one diagonal
    0 1
    1 2
    2 3
    3 0
    0 2 diagonal

**JSON**::

    {"routers": 4,
     "nodes_per_router": 1,
     "links": [[0, 1, "ring"], [1, 2, "ring"], [2, 3], [3, 0, "ring"]],
     "link_classes": ["ring", "link"]}

``nodes_per_router`` is one count for every router or a list with one count per router
(optional, default 1); ``link_classes`` is optional.
``links`` entries are ``[a, b]`` or ``[a, b, class]``; when ``link_classes`` is given every
class used must be in it.  Every error names the file and the line (edge list) or the entry
(``links[3]``) at fault.

Cables are added in file order, so port numbering follows the file (see
:mod:`federation.network`).  Radix of a router = its nodes + cable ends.  The link classes are
the file's, so ``links:`` figures in a machine file are checked against the built network (an
unknown class is reported by the runner).  Routing: the default shortest-path tables (VC = hop
index), so ``minimal`` needs ``diameter`` VCs; equal-cost next hops are shared by a fixed hash
of the destination (see :mod:`federation.network.routes`), so parallel paths all carry traffic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from federation import (
    DocumentPath,
    LinkDefaults,
    Network,
    NetworkBuilder,
    Params,
    Topology,
    hookimpl,
)
from federation.errors import TopologyError
from federation.plugin.components import TopologySize

DEFAULT_CLASS = "link"


class GraphFileParams(Params):
    path: DocumentPath = Field(
        description="edge list or .json file; relative to the file that names it")
    nodes_per_router: int | None = Field(
        None, ge=0, description="nodes per router; overrides the file; default file or 1")


class GraphData:
    """Parsed file content: router count, per-router nodes, cables and classes."""

    def __init__(self, routers: int, nodes: list[int] | int | None,
                 links: list[tuple[int, int, str]], classes: list[str]) -> None:
        self.routers = routers
        self.nodes = nodes
        self.links = links
        self.classes = classes


def _fail(path: Path, where: str, msg: str) -> TopologyError:
    return TopologyError(f"{path}: {where}: {msg}")


def read_edge_list(path: Path) -> GraphData:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{path}: cannot read the graph file: {exc}") from None
    links: list[tuple[int, int, str]] = []
    classes: list[str] = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) not in (2, 3):
            raise _fail(path, f"line {no}",
                        f"expected 'a b [class]' (two router ids and an optional link class), "
                        f"got {raw.strip()!r}")
        try:
            a, b = int(parts[0]), int(parts[1])
        except ValueError:
            raise _fail(path, f"line {no}",
                        f"router ids must be integers, got {parts[0]!r} {parts[1]!r}") from None
        cls = parts[2] if len(parts) == 3 else DEFAULT_CLASS
        _check_link(path, f"line {no}", a, b, cls, None)
        links.append((a, b, cls))
        if cls not in classes:
            classes.append(cls)
    if not links:
        raise TopologyError(f"{path}: the graph file has no links")
    routers = 1 + max(max(a, b) for a, b, _ in links)
    return GraphData(routers, None, links, classes)


def _check_link(path: Path, where: str, a: int, b: int, cls: str, routers: int | None) -> None:
    for x in (a, b):
        if x < 0 or (routers is not None and x >= routers):
            top = f"0..{routers - 1}" if routers is not None else ">= 0"
            raise _fail(path, where, f"router id {x} is out of range ({top})")
    if a == b:
        raise _fail(path, where, f"router {a} is linked to itself")
    if cls == "terminal":
        raise _fail(path, where, "'terminal' is reserved for node links; use another class")


def read_json(path: Path) -> GraphData:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise _fail(path, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{path}: cannot read the graph file: {exc}") from None
    if not isinstance(doc, dict):
        raise TopologyError(f"{path}: expected a JSON object with 'routers' and 'links'")
    unknown = set(doc) - {"routers", "nodes_per_router", "links", "link_classes"}
    if unknown:
        raise _fail(path, sorted(unknown)[0], "unknown key (known: routers, nodes_per_router, "
                                              "links, link_classes)")
    routers = doc.get("routers")
    if not isinstance(routers, int) or isinstance(routers, bool) or routers < 1:
        raise _fail(path, "routers", f"must be a positive integer, got {routers!r}")
    declared = doc.get("link_classes")
    if declared is not None and (not isinstance(declared, list)
                                 or not all(isinstance(c, str) for c in declared)):
        raise _fail(path, "link_classes", "must be a list of class names")
    nodes: Any = doc.get("nodes_per_router")
    if nodes is not None:
        if isinstance(nodes, list):
            if len(nodes) != routers:
                raise _fail(path, "nodes_per_router",
                            f"has {len(nodes)} entries but routers is {routers}")
            for i, v in enumerate(nodes):
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise _fail(path, f"nodes_per_router[{i}]",
                                f"must be a non-negative integer, got {v!r}")
        elif not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 0:
            raise _fail(path, "nodes_per_router",
                        f"must be a non-negative integer or a list, got {nodes!r}")
    raw = doc.get("links")
    if not isinstance(raw, list) or not raw:
        raise _fail(path, "links", "must be a non-empty list of [a, b] or [a, b, class]")
    links: list[tuple[int, int, str]] = []
    classes: list[str] = list(declared or [])
    for i, item in enumerate(raw):
        where = f"links[{i}]"
        if (not isinstance(item, list) or len(item) not in (2, 3)
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in item[:2])
                or (len(item) == 3 and not isinstance(item[2], str))):
            raise _fail(path, where, f"expected [a, b] or [a, b, \"class\"], got {item!r}")
        a, b = item[0], item[1]
        cls = item[2] if len(item) == 3 else DEFAULT_CLASS
        _check_link(path, where, a, b, cls, routers)
        if declared is not None and cls not in declared:
            raise _fail(path, where, f"link class {cls!r} is not in link_classes {declared}")
        links.append((a, b, cls))
        if cls not in classes:
            classes.append(cls)
    return GraphData(routers, nodes, links, classes)


def read_graph(path: str | Path) -> GraphData:
    p = Path(path)
    if not p.exists():
        raise TopologyError(f"{p}: graph file not found")
    if p.is_dir():
        raise TopologyError(f"{p}: is a directory, expected a graph file")
    return read_json(p) if p.suffix.lower() == ".json" else read_edge_list(p)


#: largest JSON graph file :meth:`GraphFile.size` parses to count it; a bigger file is counted
#: only when built (parsing JSON holds the whole document in memory, so it is not cheap)
SIZE_JSON_LIMIT = 64 * 2**20


def count_edge_list(path: Path) -> tuple[int, int] | None:
    """``(routers, cables)`` of an edge list in one streaming pass, holding one line at a time.

    Only the largest router id and the number of cable lines are kept, so a file naming router
    ``10**9`` is counted (and refused by the memory check) without allocating per router.
    ``None`` when the file cannot be read or a line does not parse: :func:`read_edge_list`
    then reports the error with its line number when the network is built.
    """
    top = -1
    cables = 0
    try:
        with path.open(encoding="utf-8") as f:
            for raw in f:
                parts = raw.split("#", 1)[0].split()
                if not parts:
                    continue
                if len(parts) not in (2, 3):
                    return None
                a, b = int(parts[0]), int(parts[1])
                if a < 0 or b < 0:
                    return None
                top = max(top, a, b)
                cables += 1
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return (top + 1, cables) if cables else None


def count_json(path: Path) -> tuple[int, int, list[int] | int | None] | None:
    """``(routers, cables, nodes_per_router)`` of a JSON graph file: the declared router count,
    the number of ``links`` entries and the file's node counts.  ``None`` when the file is
    larger than :data:`SIZE_JSON_LIMIT` or not a well-formed graph document (the build then
    reports what is wrong)."""
    try:
        if path.stat().st_size > SIZE_JSON_LIMIT:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    routers, links, nodes = doc.get("routers"), doc.get("links"), doc.get("nodes_per_router")
    if not isinstance(routers, int) or isinstance(routers, bool) or routers < 1:
        return None
    if not isinstance(links, list) or not links:
        return None
    if isinstance(nodes, bool) or (isinstance(nodes, int) and nodes < 0):
        return None
    if nodes is not None and not isinstance(nodes, int | list):
        return None
    return routers, len(links), nodes


class GraphFile(Topology):
    """Router graph from an edge list or JSON file; shortest-path routing, VC = hop index."""

    name = "graph_file"
    Params = GraphFileParams
    # The classes come from the file; the runner checks machine 'links:' against the network.
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {}
    params: GraphFileParams

    def build(self) -> Network:
        p = self.params
        g = read_graph(p.path)
        if p.nodes_per_router is not None:
            nodes = [p.nodes_per_router] * g.routers
        elif isinstance(g.nodes, list):
            nodes = list(g.nodes)
        else:
            nodes = [1 if g.nodes is None else int(g.nodes)] * g.routers
        a = np.array([x for x, _, _ in g.links], dtype=np.int64)
        b_ = np.array([y for _, y, _ in g.links], dtype=np.int64)
        deg = np.bincount(a, minlength=g.routers) + np.bincount(b_, minlength=g.routers)
        b = NetworkBuilder(g.classes)
        for r in range(g.routers):
            b.add_routers(1, radix=int(deg[r]) + nodes[r])
            b.attach_nodes(r, nodes[r])
        for x, y, cls in g.links:
            b.add_link(x, y, cls)
        try:
            net = b.build(info={"path": str(p.path), "routers": g.routers,
                                "link_classes": list(g.classes)})
            net.validate()
        except TopologyError as exc:
            raise TopologyError(f"{p.path}: {exc}") from None
        return net

    def size(self) -> TopologySize | None:
        """Routers, nodes and cables read cheaply from the file, before it is parsed in full.

        An edge list is counted in one streaming pass (largest id + 1 routers, one cable per
        line); a JSON file gives its declared ``routers`` and the length of ``links``.
        ``None`` when the file cannot be counted cheaply or does not parse; the network is
        then built first and its memory checked afterwards.
        """
        p = self.params
        path = Path(p.path)
        if not path.is_file():
            return None
        file_nodes: list[int] | int | None = None
        if path.suffix.lower() == ".json":
            counted = count_json(path)
            if counted is None:
                return None
            routers, cables, file_nodes = counted
        else:
            edges = count_edge_list(path)
            if edges is None:
                return None
            routers, cables = edges
        if p.nodes_per_router is not None:
            nodes = routers * p.nodes_per_router
        elif isinstance(file_nodes, list):
            if len(file_nodes) != routers or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for v in file_nodes):
                return None
            nodes = sum(file_nodes)
        else:
            nodes = routers * (1 if file_nodes is None else int(file_nodes))
        return TopologySize(routers=routers, nodes=nodes, cables=cables, groups=routers)


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(GraphFile)
