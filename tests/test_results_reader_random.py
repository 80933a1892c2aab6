"""Random results folders (``federation/plots/reader.py``): a property test mutates a real
folder at random; every folder either draws or is refused with a :class:`FederationError`,
and the mutations that make it wrong are always refused (the reported cases are in
``test_results_reader.py``, whose run this file reuses)."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_results_reader import _copy, _doc, _to_csv, _write_doc, folder  # noqa: F401 - fixture

from federation.errors import FederationError

# ----------------------------------------------------------------- random folders
Draw = Callable[[st.SearchStrategy[Any]], Any]


def _leaves(x: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every scalar leaf of a parsed document."""
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _leaves(v, (*path, k))]
    if isinstance(x, list):
        return [p for i, v in enumerate(x) for p in _leaves(v, (*path, i))]
    return [path]


def _set(doc: Any, path: tuple, value: Any) -> None:
    for k in path[:-1]:
        doc = doc[k]
    doc[path[-1]] = value


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def m_non_finite(d: Path, draw: Draw) -> bool:
    doc = _doc(d)
    nums = [p for p in _leaves(doc) if isinstance(_get(doc, p), (int, float))
            and not isinstance(_get(doc, p), bool)]
    _set(doc, draw(st.sampled_from(nums)), draw(st.sampled_from([math.nan, math.inf, -math.inf])))
    _write_doc(d, doc)
    return True


def m_negative_summary(d: Path, draw: Draw) -> bool:
    doc = _doc(d)
    nums = [p for p in _leaves(doc) if "summary" in p and isinstance(_get(doc, p), (int, float))
            and not isinstance(_get(doc, p), bool) and _get(doc, p) > 0]
    _set(doc, draw(st.sampled_from(nums)), -draw(st.sampled_from([1, 0.5, 1e9])))
    _write_doc(d, doc)
    return True


def m_retype(d: Path, draw: Draw) -> bool:
    doc = _doc(d)
    _set(doc, draw(st.sampled_from(_leaves(doc))),
         draw(st.sampled_from(["x", "0.3", [], {}, None, True, 10**30, -7, "$\\x$ {}"])))
    _write_doc(d, doc)
    return False


def m_delete(d: Path, draw: Draw) -> bool:
    doc = _doc(d)
    path = draw(st.sampled_from([p for p in _leaves(doc) if p]))
    parent = _get(doc, path[:-1])
    del parent[path[-1]]
    _write_doc(d, doc)
    return False


def m_indices(d: Path, draw: Draw) -> bool:
    doc = _doc(d)
    how = draw(st.sampled_from(["same", "copy", "missing", "complete"]))
    if how == "same":
        doc["points"][1]["index"] = doc["points"][0]["index"]
    elif how == "copy":
        doc["points"].append(doc["points"][draw(st.sampled_from([0, 1]))])
    elif how == "missing":
        doc.update(status="incomplete", missing_points=[draw(st.sampled_from([0, 1]))])
    else:
        doc.update(status="complete", missing_points=[7])
    _write_doc(d, doc)
    return True


def m_load(d: Path, draw: Draw) -> bool:
    doc = _doc(d)
    doc["points"][draw(st.sampled_from([0, 1]))]["sweep"]["workload.load"] = draw(
        st.sampled_from([math.nan, "0.3", [0.3], -0.1, None, True]))
    _write_doc(d, doc)
    return True


def m_files(d: Path, draw: Draw) -> bool:
    doc = _doc(d)
    i = draw(st.sampled_from([0, 1]))
    name = draw(st.sampled_from(["packets", "ports", "messages"]))
    entry = draw(st.sampled_from([
        "/etc/hostname", "../results.json", f"a/../{name}-{i}.parquet", "", ".", "sub",
        "nope.parquet", "x\u0000y.parquet", "\udc80.parquet", "link.parquet", "results.json",
        f"{name}-{1 - i}.parquet", f"{name}-{i}.parquet/", "a" * 300 + ".parquet"]))
    (d / "sub").mkdir(exist_ok=True)
    if not (d / "link.parquet").is_symlink():
        os.symlink(d.parent / "outside.parquet", d / "link.parquet")
    doc["points"][i]["files"][name] = entry
    _write_doc(d, doc)
    return True


def _table(d: Path, draw: Draw) -> tuple[Path, pa.Table, str] | None:
    """A table that results.json names (Parquet or CSV), or ``None`` if an earlier mutation
    left none to change."""
    name = draw(st.sampled_from(["packets", "ports", "messages"]))
    try:
        entry = _doc(d)["points"][draw(st.sampled_from([0, 1]))]["files"][name]
        path = d / entry
        t = pcsv.read_csv(path) if path.suffix == ".csv" else pq.read_table(path)
    except (KeyError, IndexError, TypeError, ValueError, OSError):
        return None
    return path, t, name


def _write_table(t: pa.Table, path: Path) -> None:
    if path.suffix == ".csv":
        pcsv.write_csv(t, path)
    else:
        pq.write_table(t, path)


def t_column(d: Path, draw: Draw) -> bool:
    from federation.plots.reader import TABLE_COLUMNS

    found = _table(d, draw)
    if found is None:
        return False
    path, t, name = found
    col = draw(st.sampled_from(t.column_names))
    i = t.schema.get_field_index(col)
    kind = t.schema.field(col).type
    how = draw(st.sampled_from(["drop", "str", "null", "nan", "shift"]))
    n = t.num_rows
    if how == "drop":
        t = t.remove_column(i)
    elif how == "str":
        t = t.set_column(i, col, pa.array([str(x) for x in t.column(col).to_pylist()]))
    elif how == "null":
        t = t.set_column(i, col, pa.array([None] * n, kind))
    elif how == "nan":
        t = t.set_column(i, col, pa.array([math.nan] * n))
    elif pa.types.is_integer(kind):
        t = t.set_column(i, col, pa.array([x + 1 for x in t.column(col).to_pylist()], kind))
    else:
        return False
    _write_table(t, path)
    if how == "str" and (pa.types.is_string(kind) or path.suffix == ".csv"):
        return False  # unchanged (CSV has no types: "3" reads back as the number it was)
    # a shifted column other than `point` may or may not show in the summary's figures
    return col in TABLE_COLUMNS[name] and (how != "shift" or col == "point")


def t_rows(d: Path, draw: Draw) -> bool:
    found = _table(d, draw)
    if found is None:
        return False
    path, t, _ = found
    how = draw(st.sampled_from(["empty", "other point", "garbage"]))
    if how == "empty":
        _write_table(t.slice(0, 0), path)
    elif how == "other point":
        other = path.with_name(path.name.replace("-0.", "-x.").replace("-1.", "-0.")
                               .replace("-x.", "-1."))
        if not other.is_file():
            return False
        shutil.copy(other, path)
    else:
        path.write_bytes(draw(st.binary(max_size=64)))
    return True


def t_drop_row(d: Path, draw: Draw) -> bool:
    found = _table(d, draw)
    if found is not None:
        _write_table(found[1].slice(1), found[0])
    return False  # an unmeasured row is harmless, a measured one shows in the summary


def t_csv(d: Path, draw: Draw) -> bool:
    i, name = draw(st.sampled_from([0, 1])), draw(st.sampled_from(["packets", "ports",
                                                                     "messages"]))
    if (d / f"{name}-{i}.parquet").is_file():
        _to_csv(d, i, name)
    return False


#: mutations that may leave a folder right (either outcome is fine) ...
EITHER = [m_retype, m_delete, t_drop_row, t_csv]
#: ... and mutations that make it wrong when they apply (their result says whether they did)
WRONG = [m_non_finite, m_negative_summary, m_indices, m_load, m_files, t_column, t_rows]


@settings(max_examples=30, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_folders_draw_or_are_refused(folder, data):  # noqa: F811 - the imported fixture
    """Every mutated folder either draws or is refused with a FederationError (nothing else
    escapes), and one that a mutation made wrong is always refused.  The mutations that may
    leave it right go first, so that none of them undoes the wrong one."""
    from federation.cli.plot import draw_folders

    with tempfile.TemporaryDirectory() as tmp:
        d = _copy(folder, Path(tmp) / "r")
        shutil.copy(d / "ports-0.parquet", Path(tmp) / "outside.parquet")
        muts = data.draw(st.lists(st.sampled_from(EITHER), max_size=2))
        muts += data.draw(st.lists(st.sampled_from(WRONG), max_size=1))
        wrong = False
        for m in muts:
            try:
                wrong |= m(d, data.draw)
            except (KeyError, IndexError, TypeError, ValueError):
                pass  # an earlier mutation removed what this one changes
        try:
            paths = draw_folders([d], Path(tmp) / "plots", "png", 0.05)
        except FederationError as exc:
            assert str(exc)
            return
        assert not wrong, [m.__name__ for m in muts]
        assert paths and all(p.is_file() for p in paths)
