"""Text columns of CSV tables are read as text (fuzz 47, defect 1).

A CSV cell carries no type, and pyarrow, left to infer one, read a job named ``"10"`` or
``"true"`` (or a link class named ``"10"``) as an integer or a boolean although the writer
quoted it: ``federation plot`` and ``report`` then refused a CSV folder whose Parquet twin
plots fine.  Every column the reader declares text (:data:`~federation.plots.reader.TABLE_COLUMNS`
and :data:`~federation.plots.reader.OPTIONAL_COLUMNS`) is now read as text, so a CSV folder
reads back exactly as its Parquet twin.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

#: a ring of four routers, two nodes each, its cables of a class named "10"
RING = "0 1 10\n1 2 10\n2 3 10\n3 0 10\n"

#: job names a CSV reader would take for numbers or booleans
NAMES = {"numbers": ("10", "20"), "booleans": ("true", "false")}


def _experiment(jobs: tuple[str, str], fmt: str) -> str:
    """Two open-loop jobs on the ring, the link series kept (its ``link_class`` all "10")."""
    return (
        "machine:\n"
        "  topology: {kind: graph_file, path: ring.txt, nodes_per_router: 2}\n"
        '  links: {"10": {bandwidth: 5GiB/s, latency: 20ns}}\n'
        "routing: {algorithm: minimal}\n"
        "jobs:\n"
        f'  - name: "{jobs[0]}"\n'
        "    workload: {kind: synthetic, pattern: uniform, load: 0.3}\n"
        "    placement: {kind: contiguous, count: 4}\n"
        f'  - name: "{jobs[1]}"\n'
        "    workload: {kind: synthetic, pattern: uniform, load: 0.3}\n"
        "    placement: rest\n"
        "    shared: false\n"
        "stop: {warmup: 0us, measure: 1us}\n"
        f"outputs: {{format: {fmt}, link_series: {{interval: 500ns}}}}\n")


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """Per kind of name, the same run written as CSV and as Parquet."""
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    tmp = tmp_path_factory.mktemp("csv-types")
    (tmp / "ring.txt").write_text(RING)
    out: dict[str, dict[str, Path]] = {}
    for kind, jobs in NAMES.items():
        out[kind] = {}
        for fmt in ("csv", "parquet"):
            exp = tmp / f"{kind}-{fmt}.yaml"
            exp.write_text(_experiment(jobs, fmt))
            run_experiment(load_experiment(exp), tmp / f"{kind}-{fmt}")
            out[kind][fmt] = tmp / f"{kind}-{fmt}"
    return out


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_csv_tables_read_as_their_parquet_twin(twins, kind):
    """Every table of the CSV run reads as the Parquet run's: same columns, types and values
    (the job names and the link class as the strings they are)."""
    from federation.plots.reader import load_folder

    a, b = load_folder(twins[kind]["csv"]), load_folder(twins[kind]["parquet"])
    for pa_, pb in zip(a.result.points, b.result.points, strict=True):
        assert set(pa_.files) == set(pb.files) >= {"messages", "ports", "link_series"}
        assert all(f.endswith(".csv") for f in pa_.files.values())
        for name in ("packets", "ports", "messages", "link_series"):
            ta, tb = a.table(pa_, name), b.table(pb, name)
            assert list(ta) == list(tb), name
            for col in ta:
                assert ta[col].dtype == tb[col].dtype, (name, col)
                assert np.array_equal(ta[col], tb[col]), (name, col)
        assert set(a.table(pa_, "messages")["job"]) == set(NAMES[kind])
        assert set(a.table(pa_, "link_series")["link_class"]) == {"10"}


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_plot_and_report_accept_the_csv_folder(twins, kind, tmp_path):
    """The commands the fuzz run saw refuse the folder (``job: column of type int64,
    expected strings``) draw it, with the per-job figures, and write its report."""
    folder = twins[kind]["csv"]
    r = run_cli("plot", str(folder), "--out", str(tmp_path / "figs"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    drawn = {Path(line).name for line in r.stdout.split()}
    assert {"message-completion.png", "link-classes-p0.png"} <= drawn
    r = run_cli("report", str(folder), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.html").stat().st_size > 0


def _value(kind: str) -> str:
    """A cell of ``kind`` as a CSV writer writes it; text that reads as a number."""
    return {"int": "7", "number": "0.5", "bool": "true", "str": '"10"'}[kind]


def test_every_declared_text_column_is_read_as_text(tmp_path):
    """Each text column the reader declares, its every cell a number or boolean look-alike or
    the empty string (the ``job`` of rows no single job owns), reads as those strings: the
    text columns come from the declarations, not from a list of two names."""
    from federation.plots.reader import OPTIONAL_COLUMNS, TABLE_COLUMNS, read_table

    seen = 0
    for name, want in TABLE_COLUMNS.items():
        cols = {**want, **OPTIONAL_COLUMNS.get(name, {})}
        for text in [c for c, k in cols.items() if k == "str"]:
            for cells in (['"10"', '"20"'], ['"true"', '"false"'], ['"10"', '""']):
                head = ",".join(f'"{c}"' for c in cols)
                rows = [",".join(cell if c == text else _value(k) for c, k in cols.items())
                        for cell in cells]
                path = tmp_path / f"{name}-{text}.csv"
                path.write_text("\n".join([head, *rows]) + "\n")
                got = read_table(path, name)
                assert got[text].tolist() == [c.strip('"') for c in cells], (name, text)
                assert got["point"].tolist() == [7, 7]
            seen += 1
    assert seen >= 3  # ports.link_class, messages.job, link_series.link_class
