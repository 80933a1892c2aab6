"""Topology ``graph_file``: any router graph read from a file.

Parameters:

* ``path``: the file.  A relative path is taken relative to the file that names it (the
  machine file, or the experiment file for an inline machine), wherever the run starts;
* ``nodes_per_router``: nodes attached to every router; overrides the file's value; default
  the file's value, else 1.

Two formats, chosen by the file name (``.json`` is JSON, anything else an edge list):

**Edge list** (text): one cable per line, ``a b [class]``, routers numbered from 0; the router
count is the largest id + 1.  A router id is written in the ASCII digits ``0-9`` only (no sign,
``_`` or other scripts' digits) and is at most 2147483646: the engine indexes routers with
32-bit integers, so a graph has at most 2147483647 routers.  ``#`` starts a comment (whole
line or end of line); blank lines are ignored; a UTF-8 byte-order mark at the start of the file
is skipped.  A line repeated gives parallel cables.  Without a class the cable has class
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

``routers`` is an integer from 1 to 2147483647 and the ids in ``links`` integers in
``0..routers-1``; ``nodes_per_router`` is one count for every router or a list with one count
per router (optional, default 1), each at most 2147483647, and the machine's nodes (routers x
nodes per router, or the list's sum) at most 2147483647 too; ``link_classes`` is optional.
A UTF-8 byte-order mark at the start of the file is skipped.
``links`` entries are ``[a, b]`` or ``[a, b, class]``; when ``link_classes`` is given every
class used must be in it.  Every error names the file and the line (edge list) or the entry
(``links[3]``) at fault; a long value is shown by its first 40 characters and ``...``.

Cables are added in file order, so port numbering follows the file (see
:mod:`federation.network`).  Radix of a router = its nodes + cable ends.  The link classes are
the file's, so ``links:`` figures in a machine file are checked against the built network (an
unknown class is reported by the runner).  Routing: the default shortest-path tables (VC = hop
index), so ``minimal`` needs ``diameter`` VCs; equal-cost next hops are shared by a fixed hash
of the destination (see :mod:`federation.network.routes`), so parallel paths all carry traffic.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
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
from federation.models.base import DuplicateKey, unique_keys
from federation.plugin.components import TopologySize

DEFAULT_CLASS = "link"

#: most routers (and most nodes) a network may have: the engine indexes them with int32 (the
#: limit :func:`federation.network.graph.network_problem` checks), so router ids are
#: ``0..MAX_ROUTERS - 1``
MAX_ROUTERS = 2**31 - 1
MAX_NODES = 2**31 - 1
#: how much of a long value a message shows
SHOW_CHARS = 40
#: a router id of an edge list: ASCII digits (a ``-`` only so that ``-1`` is reported as out of
#: range); not ``int()``'s syntax, which also takes ``1_0``, ``+1`` and other scripts' digits
_ID = re.compile(r"-?[0-9]+")
_BOM = "\ufeff"


class GraphFileParams(Params):
    path: DocumentPath = Field(
        description="edge list or .json file; relative to the file that names it")
    nodes_per_router: int | None = Field(
        None, ge=0, le=2**31 - 1,
        description="nodes per router; overrides the file; default file or 1")


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


def _short(text: str) -> str:
    """``text`` cut to its first :data:`SHOW_CHARS` characters and ``...`` when longer."""
    return text if len(text) <= SHOW_CHARS else text[:SHOW_CHARS] + "..."


def _show(value: Any) -> str:
    """``repr(value)`` for a message, shortened (a JSON integer is never too long for
    ``repr``: :func:`_parse_json_int` keeps a long one as its text)."""
    return _short(repr(value))


class _LongInt(int):
    """A JSON integer literal of more digits than any limit here (Python's ``int()`` refuses
    past 4300): kept as its text, valued beyond every limit with the literal's sign."""

    text: str

    def __new__(cls, text: str) -> _LongInt:
        obj = super().__new__(cls, -(10**40) if text.startswith("-") else 10**40)
        obj.text = text
        return obj

    def __repr__(self) -> str:
        return _short(self.text)

    __str__ = __repr__


def _parse_json_int(text: str) -> int:
    return _LongInt(text) if len(text) > SHOW_CHARS else int(text)


def _router_id(token: str) -> int | None:
    """The router id an edge-list token writes, or ``None`` when it is not ASCII digits (with
    an optional ``-``).  An id of more than 12 significant digits is returned as
    ``MAX_ROUTERS`` (out of range) without converting the whole token."""
    if not _ID.fullmatch(token):
        return None
    digits = token.lstrip("-").lstrip("0")
    if not digits and token.startswith("-"):  # -0: a sign, which no id has
        return None
    if len(digits) > 12:
        return -MAX_ROUTERS if token.startswith("-") else MAX_ROUTERS
    return int(token)


def _bad_id(token: str) -> str:
    msg = f"router ids must be integers written in the digits 0-9, got {_short(token)!r}"
    if _BOM in token:
        msg += " (U+FEFF is a byte-order mark, allowed only at the very start of the file)"
    return msg


def read_edge_list(path: Path) -> GraphData:
    try:
        # utf-8-sig: a byte-order mark at the start is skipped, as the YAML loader does
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{path}: cannot read the graph file: {exc}") from None
    links: list[tuple[int, int, str]] = []
    classes: list[str] = []
    # lines as an editor numbers them (read_text made every line end a '\n'); splitlines()
    # would also break at form feeds and other separators
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) not in (2, 3):
            raise _fail(path, f"line {no}",
                        f"expected 'a b [class]' (two router ids and an optional link class), "
                        f"got {_short(raw.strip())!r}")
        ids = []
        for token in parts[:2]:
            x = _router_id(token)
            if x is None:
                raise _fail(path, f"line {no}", _bad_id(token))
            ids.append((x, token))
        (a, ta), (b, tb) = ids
        for x, token in ids:
            if not 0 <= x < MAX_ROUTERS:
                raise _fail(path, f"line {no}",
                            f"router id {_short(token)} is out of range (0..{MAX_ROUTERS - 1}; "
                            f"the engine indexes at most {MAX_ROUTERS} routers)")
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
    top = (routers if routers is not None else MAX_ROUTERS) - 1
    for x in (a, b):
        if not 0 <= x <= top:
            raise _fail(path, where, f"router id {_show(x)} is out of range (0..{top})")
    if a == b:
        raise _fail(path, where, f"router {a} is linked to itself")
    if cls == "terminal":
        raise _fail(path, where, "'terminal' is reserved for node links; use another class")


def read_json(path: Path) -> GraphData:
    try:
        doc = _load_json(path)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"line {exc.lineno}", f"invalid JSON: {exc.msg}") from None
    except DuplicateKey as exc:
        raise _fail(path, _short(exc.key), "duplicate key: a key may appear once in an "
                    "object (JSON readers keep either one)") from None
    except RecursionError:
        raise TopologyError(f"{path}: invalid JSON: nested too deeply") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{path}: cannot read the graph file: {exc}") from None
    if not isinstance(doc, dict):
        raise TopologyError(f"{path}: expected a JSON object with 'routers' and 'links'")
    unknown = set(doc) - {"routers", "nodes_per_router", "links", "link_classes"}
    if unknown:
        raise _fail(path, _short(sorted(unknown)[0]),
                    "unknown key (known: routers, nodes_per_router, links, link_classes)")
    routers = doc.get("routers")
    if not _count(routers, 1, MAX_ROUTERS):
        raise _fail(path, "routers", f"must be an integer in 1..{MAX_ROUTERS} (the engine "
                                     f"indexes routers with 32-bit integers), got "
                                     f"{_show(routers)}")
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
                if not _count(v, 0, MAX_NODES):
                    raise _fail(path, f"nodes_per_router[{i}]",
                                f"must be an integer in 0..{MAX_NODES}, got {_show(v)}")
        elif not _count(nodes, 0, MAX_NODES):
            raise _fail(path, "nodes_per_router",
                        f"must be an integer in 0..{MAX_NODES} or a list, got {_show(nodes)}")
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
            raise _fail(path, where, f"expected [a, b] or [a, b, \"class\"], got {_show(item)}")
        a, b = item[0], item[1]
        cls = item[2] if len(item) == 3 else DEFAULT_CLASS
        _check_link(path, where, a, b, cls, routers)
        if declared is not None and cls not in declared:
            raise _fail(path, where, f"link class {_show(cls)} is not in link_classes "
                                     f"{_show(declared)}")
        links.append((a, b, cls))
        if cls not in classes:
            classes.append(cls)
    return GraphData(routers, nodes, links, classes)


def _count(value: Any, lo: int, hi: int) -> bool:
    """``value`` is an integer (not a bool) in ``lo..hi``."""
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def _load_json(path: Path) -> Any:
    """The JSON document of ``path``; a byte-order mark at the start is skipped, and an
    integer literal longer than :data:`SHOW_CHARS` becomes a :class:`_LongInt` (out of every
    range) instead of Python's ``ValueError`` past 4300 digits."""
    return json.loads(path.read_text(encoding="utf-8-sig"), parse_int=_parse_json_int,
                      object_pairs_hook=unique_keys)


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
        with path.open(encoding="utf-8-sig") as f:
            for raw in f:
                parts = raw.split("#", 1)[0].split()
                if not parts:
                    continue
                if len(parts) not in (2, 3):
                    return None
                a, b = _router_id(parts[0]), _router_id(parts[1])
                if a is None or b is None or not (0 <= a < MAX_ROUTERS and 0 <= b < MAX_ROUTERS):
                    return None
                top = max(top, a, b)
                cables += 1
    except (OSError, UnicodeDecodeError):
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
        doc = _load_json(path)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    routers, links, nodes = doc.get("routers"), doc.get("links"), doc.get("nodes_per_router")
    if not _count(routers, 1, MAX_ROUTERS):
        return None
    if not isinstance(links, list) or not links:
        return None
    if nodes is not None and not isinstance(nodes, list) and not _count(nodes, 0, MAX_NODES):
        return None
    return routers, len(links), nodes


def _node_total(routers: int, override: int | None, file_nodes: list[int] | int | None) -> int:
    """Nodes of the machine: ``override`` (the machine file's ``nodes_per_router``) on every
    router, else the file's list or count, else one per router."""
    if override is not None:
        return routers * override
    if isinstance(file_nodes, list):
        return sum(file_nodes)
    return routers * (1 if file_nodes is None else int(file_nodes))


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
        total = _node_total(g.routers, p.nodes_per_router, g.nodes)
        if total > MAX_NODES:
            if p.nodes_per_router is not None:
                raise TopologyError(
                    f"nodes_per_router: {p.nodes_per_router} nodes on each of the {g.routers} "
                    f"routers of {p.path} are {total} nodes, more than the engine's limit of "
                    f"{MAX_NODES}")
            raise _fail(Path(p.path), "nodes_per_router",
                        f"{total} nodes in all on {g.routers} routers, more than the engine's "
                        f"limit of {MAX_NODES}")
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
        path = Path(self.params.path)
        if not path.is_file():
            return None
        st = path.stat()
        return _file_size(str(path), st.st_mtime_ns, st.st_size, self.params.nodes_per_router)


@lru_cache(maxsize=8)
def _file_size(path: str, mtime_ns: int, n_bytes: int,
               nodes_per_router: int | None) -> TopologySize | None:
    """:meth:`GraphFile.size` of the file as it is now (its time and length in the key): the
    memory check, the job checks and the build's comparison each ask, and an edge list is
    counted by reading it whole (up to 64 MiB), once."""
    file_nodes: list[int] | int | None = None
    if path.lower().endswith(".json"):
        counted = count_json(Path(path))
        if counted is None:
            return None
        routers, cables, file_nodes = counted
    else:
        edges = count_edge_list(Path(path))
        if edges is None:
            return None
        routers, cables = edges
    if (nodes_per_router is None and isinstance(file_nodes, list)
            and (len(file_nodes) != routers
                 or not all(_count(v, 0, MAX_NODES) for v in file_nodes))):
        return None
    nodes = _node_total(routers, nodes_per_router, file_nodes)
    if nodes > MAX_NODES:
        return None  # build() refuses it, naming nodes_per_router, before allocating
    return TopologySize(routers=routers, nodes=nodes, cables=cables, groups=routers)


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(GraphFile)
