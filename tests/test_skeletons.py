"""The application skeletons (``plugins/workloads/{sweep3d,snap,fft3d,...}.py``): message
counts and bytes against their closed forms, compute placement, refusals naming the field,
determinism, the HPCG profile pattern, and every skeleton run to its end in the engine."""

from __future__ import annotations

from importlib import import_module

import numpy as np
import pytest
import yaml
from test_program_workloads import ctx_for

from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.summary import summarize
from federation.plugins.workloads.skeleton_base import (
    COLLECTIVE_TAG,
    dims_create,
    stencil_offsets,
)
from federation.programs.checks import check_programs
from federation.programs.model import COMPUTE, SEND

NAMES = ["nearest_neighbor", "sweep3d", "snap", "fft3d", "fft2d", "lammps", "nekbone", "milc",
         "hpcg", "caffe", "npb_cg", "npb_mg", "npb_ft"]


def cls_of(name: str):  # noqa: ANN201
    mod = import_module(f"federation.plugins.workloads.{name}")
    return next(v for v in vars(mod).values()
                if isinstance(v, type) and getattr(v, "name", None) == name)


def build(name: str, nodes: int, **params):  # noqa: ANN003, ANN201
    c = cls_of(name)
    return c(c.Params(**params)).programs(ctx_for(nodes))


def p2p(p):  # noqa: ANN001, ANN201
    """The point-to-point sends (collectives' tags excluded)."""
    s = (p.op_kind == SEND) & (p.op_tag < COLLECTIVE_TAG)
    return s


def test_dims_create_is_balanced():
    assert dims_create(64, 3) == (4, 4, 4)
    assert dims_create(12, 3) == (3, 2, 2)
    assert dims_create(16, 4) == (2, 2, 2, 2)
    assert dims_create(7, 2) == (7, 1)
    assert dims_create(24, 2) == (6, 4)
    assert len(stencil_offsets(3, 1)) == 6 and len(stencil_offsets(3, 3)) == 26
    assert stencil_offsets(2, 2)[:3] == [(-1, -1), (-1, 0), (-1, 1)]  # SWM's order


@pytest.mark.parametrize("dims,dist,msgs", [
    ([4, 4, 4], 1, 6 * 64), ([4, 4, 4], 3, 26 * 64), ([2, 2, 2], 1, 6 * 8),
    ([3, 1], 1, 2 * 3),  # the extent-1 axis wraps onto the rank itself: no message
])
def test_nearest_neighbor_closed_form(dims, dist, msgs):
    p = build("nearest_neighbor", int(np.prod(dims)), dims=dims, max_dimension_distance=dist,
              iterations=3, msg_size=100)
    s = p2p(p)
    assert int(s.sum()) == 3 * msgs and (p.op_bytes[s] == 100).all()
    check_programs(p, int(np.prod(dims)))


def test_nearest_neighbor_waits_every_sync():
    p = build("nearest_neighbor", 8, dims=[2, 2, 2], iterations=4, iterations_per_sync=2)
    # the third iteration's first irecv waits for the second iteration's operations to finish
    per = 12  # 6 neighbours x (irecv, isend), rank 0's operations from 0
    fin = [(int(b), int(a)) for b, a, k in zip(p.dep_before, p.dep_after, p.dep_kind,
                                                strict=True) if k == 0]
    into = {a: sorted(b for b, x in fin if x == a) for a in (per, 2 * per)}
    assert into[per] == []  # iteration 2 starts without waiting
    assert into[2 * per] == list(range(2 * per))  # iteration 3 waits for all of 1 and 2


def test_sweep3d_closed_form_and_embers_compute():
    px, py, nz, kba = 4, 3, 6, 2
    p = build("sweep3d", 12, pex=px, pey=py, nz=nz, kba=kba, nx=5, ny=7, iterations=2)
    s = p2p(p)
    links = (px - 1) * py + px * (py - 1)
    per_block = 2 * 4 * (nz // kba)  # 2 rounds of 4 sweeps
    assert int(s.sum()) == 2 * per_block * links
    x_bytes, y_bytes = 5 * kba * 8 * 8, 7 * kba * 8 * 8
    assert set(p.op_bytes[s].tolist()) == {x_bytes, y_bytes}
    comp = p.op_time_ps[p.op_kind == COMPUTE]
    assert comp.size == 2 * per_block * 12
    ns = int(5 * 7 * 275.0 / 1e9 * 1e9)  # ember: nx ny flops_per_cell / nodeflops, whole ns
    assert (comp == ns * 1000 * kba * 8).all()


def test_snap_closed_form():
    p = build("snap", 6, npey=3, npez=2, nx=8, ichunk=4, inners=2, ny=2, nz=3, nang=2, ng=1)
    s = p2p(p)
    links = (3 - 1) * 2 + 3 * (2 - 1)
    assert int(s.sum()) == 2 * 8 * (8 // 4) * links
    assert set(p.op_bytes[s].tolist()) == {4 * 2 * 1 * 8 * 3, 4 * 2 * 1 * 8 * 2}
    assert int(((p.op_kind == SEND) & (p.op_tag >= COLLECTIVE_TAG)).sum()) > 0  # allreduce


def test_fft3d_moves_embers_counts():
    n_side, nprow, npcol = 12, 2, 3
    p = build("fft3d", 6, n=n_side, npRow=nprow, iterations=1)

    def split(t: int, k: int) -> list[int]:
        return [t // k + (1 if i < t % k else 0) for i in range(k)]

    np0 = split(n_side // 2 + 1, nprow)
    np1r, np1c, np2c = split(n_side, nprow), split(n_side, npcol), split(n_side, npcol)
    row = sum(16 * np0[r] * np1c[b] * np2c[a] for r in range(nprow) for a in range(npcol)
              for b in range(npcol) if a != b)
    col = sum(16 * np0[b] * np1r[a] * np2c[c] for c in range(npcol) for a in range(nprow)
              for b in range(nprow) if a != b)
    sent = (p.op_kind == SEND)
    alltoallv_bytes = int(p.op_bytes[sent & (p.op_bytes > 0)].sum())
    barrier = 0  # empty messages
    assert alltoallv_bytes == 2 * row + 2 * col + barrier
    comp = p.op_time_ps[p.op_kind == COMPUTE].reshape(6, 6)
    elems = n_side * n_side * n_side / 6
    assert comp[0].tolist() == [round(elems * 1000)] * 5 + [round(2 * elems * 1000)]


def test_fft2d_transposes():
    p = build("fft2d", 8, row_length=64, rows_per_rank=4, algorithm="pairwise")
    s = p.op_kind == SEND
    assert int(s.sum()) == 2 * 8 * 7 and set(p.op_bytes[s].tolist()) == {4 * 8 * 16}


def test_lammps_neighbour_rebuild_every_few_steps():
    p = build("lammps", 27, iterations=4, neigh_every=2, ghost_bytes=10, neigh_bytes=20)
    s = p2p(p)
    sizes = p.op_bytes[s]
    # steps 1 and 3 (0-based) rebuild: 6 shifts of neigh_bytes; every step a reverse exchange
    assert int((sizes == 20).sum()) == 2 * 6 * 27
    assert int((sizes == 10).sum()) == (2 * 6 + 4 * 6) * 27
    # allreduces per step: 48, 48, 48, 8, 48 B; a rebuild step adds the 4 B check before its
    # exchange and SWM's five after it (the docs said 4 B every step; the code had one after)
    c = (p.op_kind == SEND) & (p.op_tag >= COLLECTIVE_TAG)
    per_allreduce = int((c & (p.op_bytes == 8)).sum()) // 4  # one 8 B allreduce per step
    assert per_allreduce > 0
    assert int((c & (p.op_bytes == 48)).sum()) == 4 * 4 * per_allreduce
    assert int((c & (p.op_bytes == 4)).sum()) == 2 * 6 * per_allreduce


def test_nekbone_26_neighbours_non_periodic():
    p = build("nekbone", 64, Rx=4, Ry=4, Rz=4, Ex=1, Ey=2, Ez=3, order=2, iterations=2)
    s = p2p(p)
    assert int(s.sum()) == 2 * ((3 * 4 - 2) ** 3 - 64)
    u = (1 * 2 + 1, 2 * 2 + 1, 3 * 2 + 1)
    faces = {u[1] * u[2] * 8, u[0] * u[2] * 8, u[0] * u[1] * 8}
    assert faces | {u[0] * 8, u[1] * 8, u[2] * 8, 8} == set(p.op_bytes[s].tolist())


def test_milc_eight_directions_two_layers():
    p = build("milc", 81, L=3, iterations=1)  # 3 x 3 x 3 x 3 ranks
    s = p2p(p)
    assert int(s.sum()) == 81 * 8 * 2
    assert set(p.op_bytes[s].tolist()) == {27 * 48, 3 * 27 * 48}


def test_hpcg_halos_per_level_and_profile_pattern(tmp_path):
    prof = {"unit": "1us", "phases": {"mg": {
        "clusters": [{"cdf": [[90, 0], [110, 1]]}, {"cdf": [[9, 0], [11, 1]]},
                     {"cdf": [[1, 0], [3, 1]]}], "pattern": [0, 1, 2, 2, 2, 1, 0]}}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(prof))
    p = build("hpcg", 8, nx=16, ny=16, nz=16, levels=4, iterations=2, sampling="constant",
              mg_compute={"profile": str(tmp_path / "p.yaml"), "phase": "mg"})
    s = p2p(p)
    per_halo = 8 * 7  # 2 x 2 x 2 grid, not periodic: every rank sees the 7 others
    assert int(s.sum()) == 2 * (3 * 4 - 1) * per_halo
    comp = p.op_time_ps[p.op_kind == COMPUTE].reshape(8, -1)[0]
    assert comp.tolist() == [x * 10**6 for x in (100, 10, 2, 2, 2, 10, 100)] * 2
    q = build("hpcg", 8, nx=16, ny=16, nz=16, levels=2, iterations=1, sampling="constant",
              mg_compute="64us")
    comp = q.op_time_ps[q.op_kind == COMPUTE].reshape(8, -1)[0]
    assert comp.tolist() == [64_000_000, 8_000_000, 64_000_000]  # levels 0, 1, 0


def test_caffe_tree_with_encode_decode():
    p = build("caffe", 10, model_bytes=1000, iterations=2, encode="1us", decode="2us")
    s = p.op_kind == SEND
    assert int(s.sum()) == 2 * 2 * 9 and (p.op_bytes[s] == 1000).all()
    comp = p.op_time_ps[p.op_kind == COMPUTE]
    # per iteration: a decode per receive (2 x 9) and an encode per sending rank and phase
    assert int((comp == 2_000_000).sum()) == 2 * 18
    inner = sum(1 for r in range(10) if 2 * r + 1 < 10)
    assert int((comp == 1_000_000).sum()) == 2 * (9 + inner)


def test_npb_cg_grid_and_exchanges():
    p = build("npb_cg", 8, npb_class="S", cgit=3, iterations=1)
    s = p2p(p)
    nprows, npcols = 2, 4
    halving = 8 * 2  # log2(4) steps per rank
    transpose = sum(1 for r in range(8) if ((r % npcols) // 2) * npcols + 2 * (r // npcols)
                    + (r % npcols) % 2 != r)
    assert int(s.sum()) == 3 * (halving + transpose)
    assert p.meta["grid"] == [nprows, npcols]


def test_npb_mg_visits():
    p = build("npb_mg", 8, npb_class="S", iterations=1)
    s = p2p(p)
    levels = 3  # 16 points per rank and axis: 8, 4, 2 (the code went on to 1 point)
    assert int(s.sum()) == (3 * levels + 2) * 3 * 2 * 8
    assert int(p.op_bytes[s].min()) == 2 * 2 * 8  # the coarsest face: 2 x 2 doubles


def test_npb_ft_one_transpose_and_a_reduce():
    p = build("npb_ft", 4, npb_class="S", iterations=2, algorithm="pairwise")
    s = p.op_kind == SEND
    block = 64 * 64 * 64 // 16 * 16
    assert int((s & (p.op_bytes == block)).sum()) == 2 * 4 * 3
    assert int((s & (p.op_bytes == 16)).sum()) == 2 * 3  # binomial reduce: p - 1


@pytest.mark.parametrize("name,n,params,path,words", [
    ("sweep3d", 12, {"pex": 5, "pey": 2, "ranks": 12}, "workload.pex", "pex x pey = 10"),
    ("sweep3d", 4, {"nz": 10, "kba": 3}, "workload.kba", "does not divide nz"),
    ("snap", 4, {"nx": 10, "ichunk": 3}, "workload.ichunk", "does not divide nx"),
    ("fft3d", 6, {"npRow": 4}, "workload.npRow", "does not divide the 6 ranks"),
    ("fft2d", 6, {"row_length": 64}, "workload.row_length", "not a multiple of the 6"),
    ("hpcg", 8, {"nx": 12}, "workload.nx", "multiple of 8"),
    ("npb_cg", 12, {}, "workload.ranks", "power-of-two number of ranks (as NPB requires), "
     "got 12"),
    ("npb_mg", 8192, {"npb_class": "S"}, "workload.npb_class", "too few"),
    ("npb_ft", 3, {}, "workload.npb_class", "does not split into 3 slabs"),
    ("nekbone", 8, {"Rx": 2}, "workload.Rx", "all of Rx, Ry, Rz"),
    ("nearest_neighbor", 64, {"ranks": 100}, "workload.ranks", "this machine has 64"),
])
def test_refusals_name_the_field(name, n, params, path, words):
    with pytest.raises(ConfigError) as e:
        build(name, n, **params)
    assert e.value.path == path and words in str(e.value)


def test_schema_refusal():
    with pytest.raises(ValueError, match="max_dimension_distance 3 exceeds the 2"):
        cls_of("nearest_neighbor").Params(dims=[2, 2], max_dimension_distance=3)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_and_seeded(name):
    kw = {"compute": {"dist": "uniform", "low": "1ps", "high": "2ps"}} \
        if "compute" in cls_of(name).Params.model_fields else {}
    a, b = build(name, 8 if name != "npb_ft" else 4, **kw), \
        build(name, 8 if name != "npb_ft" else 4, **kw)
    for f in ("op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps", "dep_before"):
        assert np.array_equal(getattr(a, f), getattr(b, f))


SMALL = {
    "nearest_neighbor": {"msg_size": "1KiB"}, "sweep3d": {"nz": 4, "nx": 10, "ny": 10},
    "snap": {"nx": 8, "inners": 1}, "fft3d": {"n": 16}, "fft2d": {"row_length": 64},
    "lammps": {"iterations": 3, "neigh_every": 2}, "nekbone": {}, "milc": {"L": 2},
    "hpcg": {"nx": 8, "ny": 8, "nz": 8}, "caffe": {"model_bytes": "64KiB"},
    "npb_cg": {"npb_class": "S", "cgit": 2}, "npb_mg": {"npb_class": "S"},
    "npb_ft": {"npb_class": "S"},
}


def test_every_skeleton_runs_to_its_end_in_the_engine(tmp_path):
    for name in NAMES:
        wl = {"kind": name, "ranks": 8, "compute": "1us", **SMALL[name]}
        if "compute" not in cls_of(name).Params.model_fields:
            wl.pop("compute")
        doc = {"schema_version": 1, "name": "s", "seed": 1,
               "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                           "nic": {"eager_threshold": "4KiB"}},
               "routing": {"algorithm": "minimal"}, "workload": wl}
        (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
        point = load_experiment(tmp_path / "e.yaml").points[0]
        prep = prepare(point)
        summary, _, _ = summarize(prep, point.engine.run(prep.job))
        assert summary.programs.ranks == 8 and summary.programs.completion_ns > 0, name


@pytest.mark.parametrize("name", NAMES)
def test_each_skeleton_has_a_page_naming_every_parameter(name):
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "skeletons" / f"{name}.md").read_text()
    for field in cls_of(name).Params.model_fields:
        assert f"`{field}`" in page, (name, field)
    for section in ("## Parameters", "## Communication pattern", "## Source", "## Scaling"):
        assert section in page


@pytest.mark.parametrize(("name", "params"), [
    ("fft2d", {"row_length": 64, "rows_per_rank": 4}),
    ("npb_ft", {"npb_class": "S"}),
])
def test_an_unknown_alltoall_algorithm_lists_the_known_ones(name, params):
    """The refusal named the field but not what it could be."""
    from federation.programs.collectives import ALGORITHMS

    with pytest.raises(ConfigError) as e:
        build(name, 4, algorithm="nope", **params)
    assert (e.value.path, e.value.message) == (
        "workload.algorithm",
        f"alltoall has no algorithm 'nope' (one of auto, {', '.join(ALGORITHMS['alltoall'])})")


@pytest.mark.parametrize(("name", "grid", "ranks"), [
    ("snap", {"npey": 2, "npez": 3}, 6),
    ("sweep3d", {"pex": 3, "pey": 2}, 6),
    ("nekbone", {"Rx": 2, "Ry": 3, "Rz": 1}, 6),
    ("nearest_neighbor", {"dims": [3, 2]}, 6),
])
def test_a_process_grid_without_ranks_gives_the_rank_count(name, grid, ranks):
    """The docs: ``ranks`` defaults to every node, "or the product of the process grid when
    given".  snap took every node and then refused its own grid (npey x npez = 6, but there
    are 16 ranks)."""
    assert build(name, 16, **grid).n_ranks == ranks
