"""Output folders and files are checked before the run and never lose results or land elsewhere
(issue 17: cases 2, 13, 15, 16, 19): an experiment ``name`` is one folder name, ``--out`` names
every file system takes and readers can open, ``--overwrite`` replaces only what federation
wrote, an unwritable place is refused before anything runs, and a full disk is one message
naming the file with the finished points kept."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import one_error, run_cli

from federation.errors import ConfigError
from federation.results.outputs import (
    OutputDir,
    OutputError,
    OutputFile,
    check_name,
    check_out_path,
)

MACHINE = "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"


def experiment(folder: Path, name: str | None = None, sweep: str = "[0.1, 0.2]") -> None:
    (folder / "m.yaml").write_text(MACHINE)
    head = f"name: {json.dumps(name)}\n" if name is not None else ""
    (folder / "e.yaml").write_text(
        head + "machine: m.yaml\n"
        "workload: {kind: synthetic, load: 0.1}\n"
        "stop: {warmup: 0.2us, measure: 1us}\n"
        f"sweep: {{workload.load: {sweep}}}\n")


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------ case 2: name as a folder
@pytest.mark.parametrize("name, why", [
    ("../precious", "'../precious' is not a plain name"),
    ("/abs/path", "'/abs/path' is not a plain name"),
    ("..", "'..' is not a plain name"),
    ("a\0b", "contains a NUL byte"),
    ("x" * 256, "is 256 bytes long; a file or folder name may have at most 255 bytes"),
])
def test_name_must_be_one_folder_name(tmp_path, name, why):
    """``name: ../precious`` with --overwrite replaced an unrelated folder; ``/abs/path``
    wrote outside results/.  Now: refused before the run, naming the file and ``name``."""
    work = tmp_path / "work"
    work.mkdir()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    experiment(work, name)
    line = one_error(run_cli("run", "e.yaml", "--overwrite", cwd=work))
    assert line.startswith("error: e.yaml: name: ") and why in line
    assert one_error(run_cli("validate", "e.yaml", cwd=work)) == line  # validate says so too
    assert listing(precious) == ["thesis.tex"]
    assert listing(work) == ["e.yaml", "m.yaml"]  # no results/ folder either


def test_a_plain_name_still_gives_results_name(tmp_path):
    experiment(tmp_path, "my run é")
    r = run_cli("run", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "results" / "my run é" / "results.json").is_file()


def test_check_name_and_check_out_path_directly():
    check_name("a.b-c", "f.yaml")
    with pytest.raises(ConfigError, match=r"^f\.yaml: name: is empty"):
        check_name(" ", "f.yaml")
    check_out_path("a/" + "b" * 255, "--out")
    with pytest.raises(ConfigError, match="is 256 bytes long"):
        check_out_path("a/" + "é" * 128, "--out")  # 256 bytes in UTF-8


# ------------------------------------------------------------------ case 16, 19: --out names
def test_long_out_name_is_refused_before_the_run(tmp_path):
    experiment(tmp_path)
    line = one_error(run_cli("run", "e.yaml", "--out", "r/" + "x" * 300, cwd=tmp_path))
    assert line.startswith("error: --out: 'xxxx") and (
        "is 300 bytes long; a file or folder name may have at most 255 bytes") in line
    assert listing(tmp_path) == ["e.yaml", "m.yaml"]


def test_long_machine_file_name_is_one_line(tmp_path):
    """``machine:`` naming a file whose name is too long: one line naming it, no traceback."""
    experiment(tmp_path)
    e = tmp_path / "e.yaml"
    e.write_text(e.read_text().replace("machine: m.yaml", "machine: " + "m" * 300 + ".yaml"))
    line = one_error(run_cli("run", "e.yaml", cwd=tmp_path))
    assert "m" * 300 + ".yaml" in line and "too long" in line


def test_non_utf8_out_is_refused(tmp_path):
    """A folder name that is not UTF-8 was written, and plot and report then refused it."""
    experiment(tmp_path)
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                        "run", "e.yaml", "--out", b"out-\xff"], capture_output=True,
                       cwd=tmp_path, env=env, timeout=300)
    r = subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(),
                                    r.stderr.decode("utf-8", "replace"))
    line = one_error(r)
    assert line == ("error: --out: 'out-\\xff' is not valid UTF-8 (plot, report and "
                    "results.json need names that are text); choose a name in UTF-8")
    assert listing(tmp_path) == ["e.yaml", "m.yaml"]


def test_non_utf8_experiment_file_name_gives_no_such_folder(tmp_path):
    """The default folder results/<stem> of a file whose name is not UTF-8: refused too."""
    experiment(tmp_path)
    bad = os.fsencode(tmp_path) + b"/e-\xfe.yaml"
    os.rename(tmp_path / "e.yaml", bad)
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                        "run", bad], capture_output=True, cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    assert b"is not valid UTF-8" in r.stderr and b"give --out" in r.stderr
    assert not (tmp_path / "results").exists()


# ------------------------------------------------------------------ --overwrite
def test_overwrite_replaces_only_what_federation_wrote(tmp_path):
    experiment(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    line = one_error(run_cli("run", "e.yaml", "--out", "mine", "--overwrite", cwd=tmp_path))
    assert line.startswith("error: --out: mine is not a results folder (no results.json of "
                           "hpc-federation.results")
    assert listing(tmp_path / "mine") == ["notes.txt"]
    # a results.json that is not ours does not make a folder ours
    (tmp_path / "mine" / "results.json").write_text('{"schema_name": "something else"}')
    one_error(run_cli("run", "e.yaml", "--out", "mine", "--overwrite", cwd=tmp_path))
    # empty, or tables only (a run whose documents were lost), may be replaced
    (tmp_path / "empty").mkdir()
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "packets-0.parquet").write_bytes(b"x")
    for out in ("empty", "tables"):
        r = run_cli("run", "e.yaml", "--out", out, "--overwrite", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "results.json" in listing(tmp_path / out)


@contextlib.contextmanager
def unwritable(path: Path):
    """``path`` made immutable (root: ``chattr +i``) or read-only (others); skips when
    neither holds here."""
    if os.geteuid() == 0:
        r = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if r.returncode != 0:
            pytest.skip("chattr +i is not available here")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o555)
        try:
            yield
        finally:
            path.chmod(mode)


def test_unreplaceable_folder_is_refused_before_the_run(tmp_path):
    experiment(tmp_path)
    assert run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path).returncode == 0
    before = (tmp_path / "o" / "results.json").read_bytes()
    target = tmp_path / "o" if os.geteuid() == 0 else tmp_path
    with unwritable(target):
        line = one_error(run_cli("run", "e.yaml", "--out", "o", "--overwrite", cwd=tmp_path))
    assert line.startswith("error: --out: cannot ")
    assert (tmp_path / "o" / "results.json").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".federation-")]


def test_output_file_checks(tmp_path):
    """One output file (crossval --out, report, schema): refused before the work for a folder,
    an existing file without --overwrite, a file that is not ours, an unwritable place."""
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError, match="d is a folder; give a file name"):
        OutputFile(tmp_path / "d", source="--out", overwrite=True)
    (tmp_path / "f.json").write_text("{}")
    with pytest.raises(ConfigError, match="exists; choose another file or pass --overwrite"):
        OutputFile(tmp_path / "f.json", source="--out")
    with pytest.raises(ConfigError, match="is not a results file; --overwrite replaces only"):
        OutputFile(tmp_path / "f.json", source="--out", overwrite=True, ours=lambda p: False,
                   what="results file")
    with pytest.raises(ConfigError, match="cannot write /proc/x.json: "):
        OutputFile(Path("/proc/x.json"), source="--out")
    with OutputFile(tmp_path / "f.json", source="--out", overwrite=True) as out:
        assert out.tmp.exists() and out.tmp.parent == tmp_path
        out.commit("new\n")
    assert (tmp_path / "f.json").read_text() == "new\n"
    assert listing(tmp_path) == ["d", "f.json"]
    with pytest.raises(RuntimeError), OutputFile(tmp_path / "g.json", source="--out"):
        raise RuntimeError  # the work failed: nothing left behind
    assert listing(tmp_path) == ["d", "f.json"]


# ------------------------------------------------------------------ case 13: crossval --out
#: one 64-byte message on the small dragonfly, native against a SimGrid made absent (not run):
#: the quickest suite that writes a results file
SUITE = """\
name: t
engines: [native, simgrid]
scenarios:
  - name: small
    experiment:
      machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}
      workload: {kind: messages, messages: [{src: 0, dst: 43, size: 64}]}
      stop: {warmup: 0ns, measure: 1us}
    metrics:
      - {metric: makespan_ns, tolerance: {relative: 0.2}}
"""


def test_crossval_out_is_checked_before_any_scenario_runs(tmp_path):
    """``crossval --out`` on a folder with --overwrite, or an unwritable place, crashed after
    every scenario had run.  Now refused first; a writable place still gets the file."""
    from federation.adapters.simgrid.locate import ENV_MODULE

    suite = tmp_path / "s.crossval.yaml"
    suite.write_text(SUITE)
    env = {ENV_MODULE: str(tmp_path / "absent.so")}
    (tmp_path / "d").mkdir()
    line = one_error(run_cli("crossval", "s.crossval.yaml", "--out", "d", "--overwrite",
                             cwd=tmp_path, env=env))
    assert line == "error: --out: d is a folder; give a file name"
    line = one_error(run_cli("crossval", "s.crossval.yaml", "--out", "/proc/r.json",
                             cwd=tmp_path, env=env))
    assert line.startswith("error: --out: cannot write /proc/r.json: ")
    (tmp_path / "notes.json").write_text('{"mine": 1}')
    line = one_error(run_cli("crossval", "s.crossval.yaml", "--out", "notes.json",
                             "--overwrite", cwd=tmp_path, env=env))
    assert "notes.json is not a crossval results file" in line
    assert (tmp_path / "notes.json").read_text() == '{"mine": 1}'
    (tmp_path / "ro").mkdir()
    with unwritable(tmp_path / "ro"):
        line = one_error(run_cli("crossval", "s.crossval.yaml", "--out", "ro/r.json",
                                 cwd=tmp_path, env=env))
    assert line.startswith("error: --out: cannot write ro/r.json: ")
    r = run_cli("crossval", "s.crossval.yaml", "--out", "r.json", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["schema_name"] == (
        "hpc-federation.crossval")
    r = run_cli("crossval", "s.crossval.yaml", "--out", "r.json", "--overwrite", cwd=tmp_path,
                env=env)
    assert r.returncode == 0, r.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".federation-")]


# ------------------------------------------------------------------ case 15: disk full
#: point 1's packets table lands on a full disk: written through a link to /dev/full (a link,
#: so that nothing that removes a failed output can remove the device itself)
FULL_DISK = """
import pathlib
import federation.results.outputs as o
real = o._write_table
full = pathlib.Path('full-disk')
full.symlink_to('/dev/full')
def write(table, out, fmt, extra):
    return real(table, full if out.name.startswith('packets-1.') else out, fmt, extra)
o._write_table = write
from federation.cli import entry
entry()
"""


def _dev_full() -> bool:
    import stat

    return Path("/dev/full").exists() and stat.S_ISCHR(Path("/dev/full").stat().st_mode)


@pytest.mark.skipif(not _dev_full(), reason="needs /dev/full")
def test_full_disk_while_writing_tables_keeps_the_finished_points(tmp_path):
    """pyarrow's traceback on ENOSPC; now one line naming the file, exit 2, point 0 kept."""
    experiment(tmp_path, sweep="[0.1, 0.2, 0.3]")
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = subprocess.run([sys.executable, "-c", FULL_DISK, "run", "e.yaml", "--out", "o"],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    line = one_error(r)
    assert line == ("error: cannot write the table packets-1.parquet: No space left on device; "
                    "1 of 3 points finished and are kept in o (results.json marked incomplete)")
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["status"] == "incomplete" and doc["missing_points"] == [1, 2]
    assert [p["index"] for p in doc["points"]] == [0]
    assert listing(tmp_path / "o") == ["messages-0.parquet", "nics-0.parquet",
                                       "packets-0.parquet", "performance.json",
                                       "ports-0.parquet", "results.json"]
    assert listing(tmp_path) == ["e.yaml", "full-disk", "m.yaml", "o"]


def test_documents_that_cannot_be_written_keep_the_tables(tmp_path, monkeypatch):
    """results.json itself on a full disk: the tables stay, in place, and the message says
    so."""
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    experiment(tmp_path, sweep="[0.1]")
    real = Path.write_text

    def full(self: Path, text: str, *a, **kw) -> int:
        if self.name == "results.json":
            raise OSError(28, "No space left on device")
        return real(self, text, *a, **kw)

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OutputError) as err:
        run_experiment(load_experiment(tmp_path / "e.yaml"), tmp_path / "o")
    assert str(err.value) == (
        f"cannot write {tmp_path / 'o' / 'results.json'}: No space left on device; the tables "
        f"of the 1 finished points are kept in {tmp_path / 'o'}, without results.json")
    assert listing(tmp_path / "o") == ["messages-0.parquet", "nics-0.parquet",
                                       "packets-0.parquet", "ports-0.parquet"]


def test_results_never_claim_a_point_whose_tables_are_missing(tmp_path):
    """The writer counts what is in the folder: a point naming a table that is not there is
    listed as missing, and the run is incomplete."""
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import compute_point, write_point_tables
    from federation.pipeline.run import _result

    experiment(tmp_path)
    loaded = load_experiment(tmp_path / "e.yaml")
    from federation.pipeline.point import preflight

    cache = preflight(loaded, 2**33)
    writer = OutputDir(tmp_path / "o", "parquet")
    done = {}
    for i, point in enumerate(loaded.points):
        res, msum, tables = compute_point(i, point, cache)
        done[i] = (write_point_tables(writer.tmp, "parquet", res, tables), msum)
    (writer.tmp / "ports-1.parquet").unlink()  # e.g. a worker's file that never landed
    written = writer.finish(_result(loaded, done), [None, None])
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert written.status == doc["status"] == "incomplete"
    assert doc["missing_points"] == [1] and [p["index"] for p in doc["points"]] == [0]
    assert doc["error"] == "the tables of points [1] were not written"


# ------------------------------------------------------------------ the other writers
def test_every_writer_checks_its_destination_first(tmp_path):
    """plot, report and schema take their --out through the same checks, and report and
    schema replace their files whole."""
    experiment(tmp_path, sweep="[0.1]")
    assert run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path).returncode == 0
    long = "x" * 300
    for args in (("plot", "o", "--out", long), ("report", "o", "--out", f"r/{long}.html"),
                 ("schema", "--out", long)):
        line = one_error(run_cli(*args, cwd=tmp_path))
        assert line.startswith("error: --out: 'xxxx") and "bytes long" in line, (args, line)
    line = one_error(run_cli("report", "o", "--out", "/proc/r.html", cwd=tmp_path))
    assert line.startswith("error: --out: cannot write /proc/r.html: ")
    for again in ([], ["--overwrite"]):  # made, then replaced
        r = run_cli("report", "o", "--out", "rep/r.html", *again, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert listing(tmp_path / "rep") == ["r.html"]
        r = run_cli("schema", "--out", "s", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert listing(tmp_path / "s") == ["experiment.schema.json", "machine.schema.json"]


@pytest.mark.skipif(not _dev_full(), reason="needs /dev/full")
def test_full_temporary_disk_while_spooling_is_one_message(tmp_path):
    """The per-packet tables of a long run are spooled to $TMPDIR first: a full one is named,
    with what to do about it."""
    from types import SimpleNamespace

    import numpy as np

    from federation.results.spool import Spool

    spool = Spool(["a"])
    (tmp_path / "0-a.npy").symlink_to("/dev/full")
    spool._dir = SimpleNamespace(name=str(tmp_path))
    with pytest.raises(OutputError) as err:
        spool.append({"a": np.arange(10_000)})
    assert str(err.value).startswith(f"cannot write a temporary table in {tmp_path}: No space "
                                     "left on device (the per-packet and per-message tables")
    assert "TMPDIR" in str(err.value) and listing(tmp_path) == []
