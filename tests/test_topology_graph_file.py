"""The graph_file topology: a machine read from an edge list or a JSON file (its counts,
its refusals naming the file and line, and the memory figure's formatting of any size)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from test_topology_flat import assert_minimal, make

from federation.errors import ConfigError, TopologyError
from federation.plugins.topologies.graph_file import GraphFile

# --------------------------------------------------------------------------- graph files


def test_graph_file_edge_list_and_json(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("# ring of 4 plus a diagonal\n0 1\n1 2 ring\n\n2 3  # trailing comment\n3 0\n"
                 "0 2 diag\n0 2 diag\n")
    topo, net = make(GraphFile, path=str(p), nodes_per_router=2)
    assert (net.n_routers, net.n_nodes, net.n_links) == (4, 8, 6)
    assert net.link_classes == ("terminal", "link", "ring", "diag")
    assert net.radix.tolist() == [2 + 4, 2 + 2, 2 + 4, 2 + 2]
    assert_minimal(topo, net)
    j = tmp_path / "g.json"
    j.write_text('{"routers": 3, "nodes_per_router": [1, 0, 2],\n'
                 ' "links": [[0, 1, "a"], [1, 2], [2, 0, "a"]], "link_classes": ["a", "link"]}')
    topo, net = make(GraphFile, path=str(j))
    assert net.node_router.tolist() == [0, 2, 2]
    assert_minimal(topo, net)


@pytest.mark.parametrize(("name", "text", "msg"), [
    ("e.txt", "0 1\n1 x\n", r"e\.txt: line 2: router ids must be integers"),
    ("e.txt", "0 1\n\n1 2 a b\n", r"e\.txt: line 3: expected 'a b \[class\]'"),
    ("e.txt", "# c\n0 1\n2 2\n", r"e\.txt: line 3: router 2 is linked to itself"),
    ("e.txt", "0 1\n-1 2\n", r"e\.txt: line 2: router id -1 is out of range"),
    ("e.txt", "0 1\n2 3\n", r"e\.txt: the router graph is not connected"),
    ("e.txt", "# nothing\n", r"e\.txt: the graph file has no links"),
    ("e.json", '{"routers": 2,\n "links": [[0, 1]\n', r"e\.json: line 3: invalid JSON"),
    ("e.json", '{"routers": 2, "links": [[0, 1], [1, 5]]}', r"e\.json: links\[1\]: router id 5"),
    ("e.json", '{"routers": 2, "links": [[0, 1, "q"]], "link_classes": ["a"]}',
     r"links\[0\]: link class 'q' is not in link_classes"),
    ("e.json", '{"routers": 2, "links": [[0, 1]], "nodes": 1}', r"e\.json: nodes: unknown key"),
])
def test_graph_file_errors_name_file_and_line(tmp_path, name, text, msg):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(TopologyError, match=msg):
        make(GraphFile, path=str(p))
    with pytest.raises(TopologyError, match="graph file not found"):
        make(GraphFile, path=str(tmp_path / "missing.txt"))


# Router ids are ASCII digits within the engine's int32 indexing (not Python int()'s syntax:
# '1_0' was router 10, Arabic-Indic digits were ids); a long value is shown by its first 40
# characters; a leading byte-order mark is skipped.
RANGE = "is out of range (0..2147483646; the engine indexes at most 2147483647 routers)"
DIGITS = "router ids must be integers written in the digits 0-9, got"
LONG = "9" * 40 + "..."
GRAPH_REFUSALS = [
    ("g.txt", "0 1\n1 1_0\n", f"line 2: {DIGITS} '1_0'"),
    ("g.txt", "0 1\n\u0661 \u0662\n", f"line 2: {DIGITS} '\u0661'"),
    ("g.txt", "0 +1\n", f"line 1: {DIGITS} '+1'"),
    ("g.txt", "0 1\n1 x\n", f"line 2: {DIGITS} 'x'"),
    ("g.txt", "0 1\n\ufeff1 2\n", f"line 2: {DIGITS} '\\ufeff1' (U+FEFF is a byte-order mark, "
                                  "allowed only at the very start of the file)"),
    ("g.txt", "0 1\n1 " + "9" * 5000 + "\n", f"line 2: router id {LONG} {RANGE}"),
    ("g.txt", "0 1\n1 " + "1" + "0" * 200 + "\n", f"line 2: router id 1{'0' * 39}... {RANGE}"),
    ("g.txt", "0 2147483647\n", f"line 1: router id 2147483647 {RANGE}"),
    ("g.txt", "0 1\n-1 2\n", f"line 2: router id -1 {RANGE}"),
    ("g.txt", "0 1 " + "x" * 100 + " y\n",
     "line 1: expected 'a b [class]' (two router ids and an optional link class), got "
     f"'0 1 {'x' * 36}...'"),
    ("g.txt", "0 1\x0c1 2\n2 0\n",  # a form feed is not a line break (editors agree)
     "line 1: expected 'a b [class]' (two router ids and an optional link class), got "
     "'0 1\\x0c1 2'"),
    ("g.json", '{"routers": 1' + "0" * 200 + ', "links": [[0, 1]]}',
     "routers: must be an integer in 1..2147483647 (the engine indexes routers with 32-bit "
     f"integers), got 1{'0' * 39}..."),
    ("g.json", '{"routers": ' + "9" * 5000 + ', "links": [[0, 1]]}',
     "routers: must be an integer in 1..2147483647 (the engine indexes routers with 32-bit "
     f"integers), got {LONG}"),
    ("g.json", '{"routers": 2147483648, "links": [[0, 1]]}',
     "routers: must be an integer in 1..2147483647 (the engine indexes routers with 32-bit "
     "integers), got 2147483648"),
    ("g.json", '{"routers": 2, "links": [[0, ' + "9" * 5000 + "]]}",
     f"links[0]: router id {LONG} is out of range (0..1)"),
    ("g.json", '{"routers": 2, "links": [["0", "1"]]}',
     "links[0]: expected [a, b] or [a, b, \"class\"], got ['0', '1']"),
    ("g.json", '{"routers": 2, "links": [[0, 1], ' + str(list(range(100))) + "]}",
     "links[1]: expected [a, b] or [a, b, \"class\"], got [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "
     "11, 1..."),
    ("g.json", '{"routers": 2, "nodes_per_router": 2147483648, "links": [[0, 1]]}',
     "nodes_per_router: must be an integer in 0..2147483647 or a list, got 2147483648"),
    ("g.json", '{"routers": 2, "nodes_per_router": [1, 2147483648], "links": [[0, 1]]}',
     "nodes_per_router[1]: must be an integer in 0..2147483647, got 2147483648"),
    ("g.json", '{"routers": 2147483647, "nodes_per_router": 2, "links": [[0, 1]]}',
     "nodes_per_router: 4294967294 nodes in all on 2147483647 routers, more than the engine's "
     "limit of 2147483647"),
    ("g.json", '{"' + "k" * 100 + '": 1, "routers": 2, "links": [[0, 1]]}',
     f"{'k' * 40}...: unknown key (known: routers, nodes_per_router, links, link_classes)"),
    ("g.json", "[" * 100000 + "]" * 100000, "invalid JSON: nested too deeply"),
    # a sign on zero was router 0; a key twice kept the last (a path instead of a ring)
    ("g.txt", "0 1\n1 2\n-0 2\n", f"line 3: {DIGITS} '-0'"),
    ("g.json", '{"routers": 4, "links": [[0, 1], [1, 2], [2, 3], [3, 0]], '
     '"links": [[0, 1], [1, 2], [2, 3]]}',
     "links: duplicate key: a key may appear once in an object (JSON readers keep either "
     "one)"),
]


@pytest.mark.parametrize(("name", "text", "msg"), GRAPH_REFUSALS,
                         ids=[f"{name}-{i}" for i, (name, _, _) in enumerate(GRAPH_REFUSALS)])
def test_graph_file_refusals_are_exact(tmp_path, name, text, msg):
    """Each refusal names the file and the line or entry.  size() never counts past the
    engine's limits (it declines; the build reports it before allocating per router)."""
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    topo = GraphFile(GraphFile.Params(path=str(p)))
    size = topo.size()
    assert size is None or max(size.routers, size.nodes) <= 2**31 - 1
    with pytest.raises(TopologyError) as exc:
        topo.build()
    assert str(exc.value) == f"{p}: {msg}"


@pytest.mark.parametrize(("name", "text", "msg"), [
    ("g.txt", "0 1_0\n", f"line 1: {DIGITS} '1_0'"),
    ("g.txt", "0 " + "1" + "0" * 200 + "\n", f"line 1: router id 1{'0' * 39}... {RANGE}"),
    ("g.json", '{"routers": 1' + "0" * 200 + ', "links": [[0, 1]]}',
     "routers: must be an integer in 1..2147483647 (the engine indexes routers with 32-bit "
     f"integers), got 1{'0' * 39}..."),
])
def test_graph_file_refusals_on_the_command_line(tmp_path, name, text, msg):
    """``federation topology`` and ``validate``: exit 2, one line naming the file, no
    traceback (a router id of 10**200 ended in an OverflowError formatting the memory
    refusal)."""
    from conftest import one_error, run_cli

    (tmp_path / name).write_text(text)
    (tmp_path / "m.yaml").write_text(f"topology: {{kind: graph_file, path: {name}}}\n")
    for command in ("topology", "validate"):
        line = one_error(run_cli(command, "m.yaml", cwd=tmp_path))
        assert line == (f"error: m.yaml: topology: topology 'graph_file': {tmp_path / name}: "
                        f"{msg}")


def test_graph_file_machine_nodes_per_router_limit(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("0 2147483646\n")
    with pytest.raises(ValidationError, match="less than or equal to 2147483647"):
        GraphFile.Params(path=str(p), nodes_per_router=2**31)
    topo = GraphFile(GraphFile.Params(path=str(p), nodes_per_router=2))
    assert topo.size() is None
    with pytest.raises(TopologyError) as exc:
        topo.build()
    assert str(exc.value) == (f"nodes_per_router: 2 nodes on each of the 2147483647 routers of "
                              f"{p} are 4294967294 nodes, more than the engine's limit of "
                              "2147483647")


def test_graph_file_largest_id_is_counted_and_refused_by_memory(tmp_path):
    """Id 2147483646 is within the engine's range: counted, then refused by the memory check
    (which formats its figures without overflow)."""
    from federation.pipeline.bounds import check_machine_memory
    from federation.pipeline.load import load_machine
    from federation.plugin.components import TopologySize

    (tmp_path / "g.txt").write_text("0 2147483646\n")
    (tmp_path / "m.yaml").write_text("topology: {kind: graph_file, path: g.txt}\n")
    rm = load_machine(tmp_path / "m.yaml")
    assert rm.topology.size() == TopologySize(2**31 - 1, 2**31 - 1, 1, 2**31 - 1)
    with pytest.raises(ConfigError, match=r"this machine \(2147483647 routers, 2147483647 "
                                          r"nodes, 1 cables\) needs about 1\.72e\+11 GiB"):
        check_machine_memory(rm, 64 * 2**30)


@pytest.mark.parametrize("name, text", [
    ("g.txt", "0 1\n1 2\n2 0\n"),
    ("g.json", '{"routers": 3, "links": [[0, 1], [1, 2], [2, 0]]}'),
])
def test_graph_file_skips_a_leading_byte_order_mark(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8-sig")
    assert p.read_bytes().startswith(b"\xef\xbb\xbf")
    topo, net = make(GraphFile, path=str(p))
    assert (net.n_routers, net.n_links) == (3, 3)
    assert topo.size().routers == 3


def test_graph_file_ids_with_leading_zeros_are_decimal(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("00 01\n1 " + "0" * 3000 + "2\n")
    topo, net = make(GraphFile, path=str(p))
    assert net.n_routers == 3 and topo.size().routers == 3


GIB = [(0, "0 GiB"), (2**30, "1 GiB"), (10**12, "931 GiB"),
       (10**155, "9.31e+145 GiB"), (10**200, "9.31e+190 GiB"), (10**400, "9.31e+390 GiB"),
       (10**5000, "9.31e+4990 GiB")]


@pytest.mark.parametrize(("n", "text"), GIB, ids=[text for _, text in GIB])
def test_gib_formats_any_size(n, text):
    """An int too large for a float (10**200 bytes) is formatted, not an OverflowError."""
    from federation.pipeline.points import gib

    assert gib(n) == text
