"""What an existing ``--out`` is decides whether it may be written (fuzz report 45, defects 1 to 3
and 9e): a device, a FIFO, a socket or a link is never replaced (``--overwrite`` replaces only
a regular file, or folder, federation could have written) and never opened (a FIFO blocks the
open: the command hung); an output that is one of the command's own inputs (a results
folder's ``results.json``, ``performance.json`` or tables, the experiment or suite file) is
refused; a file name ending in ``/`` is refused.  Each refusal is one line naming the option,
exit 2, the thing left as it was and nothing written.

Device nodes and FIFOs are made only under ``tmp_path``; a command is never pointed at a real
system path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from federation.errors import ConfigError
from federation.results.outputs import OutputDir, OutputFile, OutputFiles, check_not_input

MACHINE = "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"
EXPERIMENT = ("machine: m.yaml\n"
              "workload: {kind: synthetic, load: 0.1}\n"
              "stop: {warmup: 0.2us, measure: 1us}\n")
#: a closed-loop workload: what export and comm read
PROGRAM = ("machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
           "workload: {kind: allreduce, ranks: 6, size: 8B, iterations: 1, compute: 1us}\n")
SUITE = """\
name: t
engines: [native, simgrid]
scenarios:
  - name: small
    experiment:
      machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}
      workload: {kind: messages, messages: [{src: 0, dst: 5, size: 64}]}
      stop: {warmup: 0ns, measure: 1us}
    metrics:
      - {metric: makespan_ns, tolerance: {relative: 0.2}}
"""
#: seconds: a refusal is immediate; a command that opens a FIFO hangs until this
TIMEOUT = 60


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=TIMEOUT)


def refusal(r: subprocess.CompletedProcess, option: str = "--out") -> str:
    """The one-line refusal (exit 2, no traceback, nothing on stdout), naming ``option``."""
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {option}: "), lines[0]
    return lines[0]


def chardev(path: Path) -> Path:
    """A character device node like /dev/null (1, 3) at ``path``; skips without the right."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def is_chardev(path: Path) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)


def is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob(".federation-*")]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """One small results folder, made once (tests copy it)."""
    d = tmp_path_factory.mktemp("run")
    (d / "m.yaml").write_text(MACHINE)
    (d / "e.yaml").write_text(EXPERIMENT)
    r = cli("run", "e.yaml", "--out", "r", cwd=d)
    assert r.returncode == 0, r.stderr
    return d / "r"


@pytest.fixture()
def work(tmp_path, results) -> Path:
    """``tmp_path`` holding a copy of the results folder (``r``), a program (``p.yaml``) and
    a crossval suite (``s.yaml``)."""
    shutil.copytree(results, tmp_path / "r")
    (tmp_path / "p.yaml").write_text(PROGRAM)
    (tmp_path / "s.yaml").write_text(SUITE)
    return tmp_path


#: every command that writes one file, as (arguments before --out, the option, a file name)
FILE_WRITERS = {
    "report": (["report", "r"], "--out", "page.html"),
    "export": (["export", "p.yaml"], "--out", "p.goal"),
    "crossval": (["crossval", "s.yaml"], "--out", "cv.json"),
    "comm": (["comm", "p.yaml"], "--plot", "m.png"),
}


# ------------------------------------------------------------------ defect 1: devices
@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
def test_a_device_is_never_replaced(work, command):
    """``--out /dev/null --overwrite`` replaced the machine's /dev/null with the report."""
    head, option, name = FILE_WRITERS[command]
    dev = chardev(work / name)
    line = refusal(cli(*head, option, name, "--overwrite", cwd=work), option)
    assert f"{name} is a character device, not a regular file" in line
    assert is_chardev(dev)
    line = refusal(cli(*head, option, name, cwd=work), option)  # the same without --overwrite
    assert "character device" in line
    assert is_chardev(dev) and not leftovers(work)


@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
def test_a_link_is_never_replaced_nor_followed(work, command):
    """A link to a device (``/dev/stdout``) or to a regular file: refused, both left as they
    were (federation writes no links, so none is ``ours`` to replace)."""
    head, option, name = FILE_WRITERS[command]
    dev = chardev(work / "dev")
    (work / name).symlink_to("dev")
    line = refusal(cli(*head, option, name, "--overwrite", cwd=work), option)
    assert f"{name} is a symbolic link (to dev)" in line
    assert (work / name).is_symlink() and is_chardev(dev)
    (work / name).unlink()
    (work / "mine.txt").write_text("keep me")
    (work / name).symlink_to("mine.txt")
    line = refusal(cli(*head, option, name, "--overwrite", cwd=work), option)
    assert f"{name} is a symbolic link (to mine.txt)" in line
    assert (work / name).is_symlink() and (work / "mine.txt").read_text() == "keep me"
    assert not leftovers(work)


def test_folder_outputs_refuse_a_device_and_never_replace_one_inside(work):
    """``plot --out`` and ``run --out`` on a device; ``plot --out`` into a folder where a
    figure's name is a device, a FIFO or a link, with --overwrite."""
    dev = chardev(work / "dev")
    line = refusal(cli("plot", "r", "--out", "dev", "--overwrite", cwd=work))
    assert line == "error: --out: dev exists and is not a folder: it is a character device"
    (work / "m.yaml").write_text(MACHINE)
    (work / "e.yaml").write_text(EXPERIMENT)
    line = refusal(cli("run", "e.yaml", "--out", "dev", "--overwrite", cwd=work))
    assert "dev exists and is not a folder: it is a character device" in line
    assert is_chardev(dev)
    figs = work / "figs"
    figs.mkdir()
    taken = chardev(figs / "latency-load.png")
    line = refusal(cli("plot", "r", "--out", "figs", "--overwrite", cwd=work))
    assert "figs/latency-load.png is a character device, not a regular file" in line
    assert is_chardev(taken) and os.listdir(figs) == ["latency-load.png"]
    taken.unlink()
    fifo(taken)
    line = refusal(cli("plot", "r", "--out", "figs", "--overwrite", cwd=work))
    assert "figs/latency-load.png is a FIFO (named pipe), not a regular file" in line
    assert is_fifo(taken) and os.listdir(figs) == ["latency-load.png"]


# ------------------------------------------------------------------ defect 2: FIFOs
@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
def test_a_fifo_is_refused_at_once(work, command):
    """report and export opened the FIFO to prove it replaceable, crossval to read its
    schema: each blocked until killed."""
    head, option, name = FILE_WRITERS[command]
    pipe = fifo(work / name)
    for again in (["--overwrite"], []):
        line = refusal(cli(*head, option, name, *again, cwd=work), option)
        assert f"{name} is a FIFO (named pipe), not a regular file" in line
    assert is_fifo(pipe) and not leftovers(work)


def test_a_results_folder_whose_results_json_is_a_fifo(work):
    """Read by nobody: plot and report say what it is, ``run --overwrite`` (which reads a
    folder's results.json to see whether it may replace it) refuses the folder."""
    (work / "r" / "results.json").unlink()
    fifo(work / "r" / "results.json")
    for command in ("plot", "report"):
        line = refusal(cli(command, "r", cwd=work), "r")
        assert "results.json is not a regular file" in line
    (work / "m.yaml").write_text(MACHINE)
    (work / "e.yaml").write_text(EXPERIMENT)
    line = refusal(cli("run", "e.yaml", "--out", "r", "--overwrite", cwd=work))
    assert "r is not a results folder" in line
    assert is_fifo(work / "r" / "results.json")


# ------------------------------------------------------------------ defect 3: inputs
@pytest.mark.parametrize("name", ["results.json", "performance.json", "ports-0.parquet",
                                  "packets-7.parquet"])
def test_report_never_writes_over_the_folder_it_reads(work, name):
    before = {p.name: p.read_bytes() for p in (work / "r").iterdir()}
    for out in (f"r/{name}", f"r/../r/{name}"):
        line = refusal(cli("report", "r", "--out", out, "--overwrite", cwd=work))
        assert f"is the {name} of the results folder r, which this command reads" in line
    (work / "alias").symlink_to("r")  # the same folder by another path
    line = refusal(cli("report", "r", "--out", f"alias/{name}", "--overwrite", cwd=work))
    assert "which this command reads" in line
    assert {p.name: p.read_bytes() for p in (work / "r").iterdir()} == before


def test_a_files_entry_of_any_name_is_never_written_over(work):
    """A table whose name is not one federation gives it is protected as a ``files``
    entry (found once the folder is read)."""
    r = work / "r"
    (r / "ports-0.parquet").rename(r / "odd.parquet")
    doc = json.loads((r / "results.json").read_text())
    doc["points"][0]["files"]["ports"] = "odd.parquet"
    (r / "results.json").write_text(json.dumps(doc))
    before = (r / "odd.parquet").read_bytes()
    line = refusal(cli("report", "r", "--out", "r/odd.parquet", "--overwrite", cwd=work))
    assert line == ("error: --out: r/odd.parquet is a file this command reads: writing it "
                    "would replace the input; choose another name")
    assert (r / "odd.parquet").read_bytes() == before


def test_plot_into_the_folder_it_reads_is_refused_and_the_defaults_still_work(work):
    line = refusal(cli("plot", "r", "--out", "r", cwd=work))
    assert line.startswith("error: --out: r is the results folder this command reads")
    line = refusal(cli("plot", "r", "--out", "r/ports-0.parquet", "--overwrite", cwd=work))
    assert "which this command reads" in line
    r = cli("report", "r", cwd=work)  # the defaults are inside it, and are not its own files
    assert r.returncode == 0, r.stderr
    assert (work / "r" / "report.html").is_file()
    r = cli("report", "r", "--out", "r/sub/page.html", cwd=work)
    assert r.returncode == 0, r.stderr


def test_export_comm_and_crossval_never_write_over_their_input(work):
    before = (work / "p.yaml").read_bytes()
    line = refusal(cli("export", "p.yaml", "--out", "./p.yaml", "--overwrite", cwd=work))
    assert line == ("error: --out: p.yaml is a file this command reads: writing it would "
                    "replace the input; choose another name")
    (work / "p.png").symlink_to("p.yaml")  # the input by another name
    line = refusal(cli("comm", "p.yaml", "--plot", "p.png", "--overwrite", cwd=work), "--plot")
    assert line.startswith("error: --plot: p.png is a file this command reads (p.yaml)")
    assert (work / "p.yaml").read_bytes() == before
    suite = (work / "s.yaml").read_bytes()
    line = refusal(cli("crossval", "s.yaml", "--out", "./s.yaml", "--overwrite", cwd=work))
    assert "is a file this command reads" in line
    assert (work / "s.yaml").read_bytes() == suite


def test_export_into_the_schedule_folder_it_reads_is_refused(work):
    dumpi = work / "trace"
    dumpi.mkdir()
    line = refusal(cli("export", "trace", "--out", "trace/x.goal", cwd=work))
    assert line == ("error: --out: trace/x.goal is inside trace, which this command reads; "
                    "choose a place outside it")
    assert os.listdir(dumpi) == []


# ------------------------------------------------------------------ 9e: a trailing slash
@pytest.mark.parametrize("command", sorted(FILE_WRITERS))
def test_a_file_name_ending_in_a_slash_is_refused(work, command):
    """``crossval --out o.json/`` wrote o.json."""
    head, option, name = FILE_WRITERS[command]
    line = refusal(cli(*head, option, f"new/{name}/", cwd=work), option)
    assert f"'new/{name}/' ends in '/', which names a folder" in line
    assert not (work / "new").exists() and not leftovers(work)


# ------------------------------------------------------------------ the writers directly
def test_the_writers_refuse_what_is_not_theirs(tmp_path):
    dev = chardev(tmp_path / "dev")
    pipe = fifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to("pipe")
    (tmp_path / "d").mkdir()
    (tmp_path / "dlink").symlink_to("d")
    for p, kind in ((dev, "a character device"), (pipe, "a FIFO (named pipe)"),
                    (tmp_path / "link", "a symbolic link (to pipe)")):
        with pytest.raises(ConfigError, match=re.escape(f"is {kind}")):
            OutputFile(p, source="--out", overwrite=True, ours=lambda p: True)
        with pytest.raises(ConfigError, match="exists and is not a folder: it is"
                           if p != tmp_path / "link" else "is a symbolic link .to pipe."):
            OutputDir(p, "parquet", overwrite=True)
        with pytest.raises(ConfigError, match="exists and is not a folder: it is"):
            OutputFiles(p, source="--out", overwrite=True)
    with pytest.raises(ConfigError, match="dlink is a symbolic link .to d.; federation"):
        OutputDir(tmp_path / "dlink", "parquet", overwrite=True)
    with OutputFiles(tmp_path / "dlink", source="--out") as into:  # a link to a folder: into it
        (into.tmp / "f.png").write_bytes(b"x")
        into.commit()
    assert (tmp_path / "d" / "f.png").read_bytes() == b"x"
    with pytest.raises(ConfigError, match="ends in '/', which names a folder"):
        OutputFile("o.json/", source="--out")
    assert is_chardev(dev) and is_fifo(pipe)
    assert sorted(os.listdir(tmp_path)) == ["d", "dev", "dlink", "link", "pipe"]


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    if len(os.fsencode(path)) >= 100:
        pytest.skip("the temporary folder's path is too long for a socket")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(ConfigError, match="s is a socket, not a regular file"):
            OutputFile(path, source="--out", overwrite=True)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_destination_swapped_for_a_fifo_before_the_commit(tmp_path):
    """Checked again just before the rename: a FIFO made meanwhile is not replaced."""
    out = OutputFile(tmp_path / "o.json", source="--out")
    fifo(tmp_path / "o.json")
    with pytest.raises(ConfigError, match="o.json is a FIFO"):
        out.commit("{}")
    assert is_fifo(tmp_path / "o.json") and not leftovers(tmp_path)


def test_check_not_input_compares_real_paths(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "t.csv").write_text("a\n")
    (tmp_path / "alias").symlink_to("r")
    with pytest.raises(ConfigError, match="is the results.json of the results folder"):
        check_not_input(tmp_path / "alias" / "results.json", "--out", results=[tmp_path / "r"])
    with pytest.raises(ConfigError, match="is a file this command reads"):
        check_not_input(tmp_path / "alias" / "t.csv", "--out", files=[tmp_path / "r/t.csv"])
    with pytest.raises(ConfigError, match="is inside"):
        check_not_input(tmp_path / "alias" / "x" / "y", "--out", within=[tmp_path / "r"])
    for fine in ("report.html", "plots", "sub/results.json"):  # where outputs go by default
        check_not_input(tmp_path / "r" / fine, "--out", results=[tmp_path / "r"])


def test_a_suite_that_is_a_fifo_or_a_folder_is_named_as_such(work):
    fifo(work / "f.yaml")
    line = refusal(cli("crossval", "f.yaml", "--out", "o.json", cwd=work), "f.yaml")
    assert line == "error: f.yaml: the suite is a FIFO (named pipe), not a regular file"
    line = refusal(cli("crossval", "r", "--out", "o.json", cwd=work), "r")
    assert line == "error: r: the suite is a folder, not a regular file"
    assert is_fifo(work / "f.yaml") and not (work / "o.json").exists()
