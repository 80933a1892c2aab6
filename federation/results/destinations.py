"""Where a command may write, checked before anything is written (:mod:`federation.results.outputs`
does the writing): names every file system takes (:func:`check_out_path`, :func:`check_name`),
what an existing destination is (:func:`lstat_out`, found with ``lstat`` only: ``open`` blocks
on a FIFO and reads a device), and outputs that would replace the command's own inputs
(:func:`check_not_input`).

**Links.** Federation writes no symbolic links, and ``--overwrite`` replaces only a regular file
or a folder it could have written, so a destination that is itself a link is refused, whatever
it leads to: replacing the link would drop it and put the output somewhere other than where
it led (``/dev/stdout`` is a link), and following it would write somewhere the option does
not name (as the results reader refuses a table that is a link leading out of its folder).
Links in the folders *above* a destination are followed, as every path is; so is a link to
the folder that ``plot --out`` writes its figures into, which is written into, never replaced.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from federation.errors import ConfigError, os_reason

#: the longest file or folder name, in bytes, of the common file systems (ext4, XFS, btrfs,
#: ZFS, NTFS in UTF-16 units): a longer one fails with ENAMETOOLONG
NAME_MAX = 255

#: files a federation output folder holds besides ``results.json``: a folder of only these may
#: be replaced (``--overwrite``) even without ``results.json`` (``sst generate``, or a run
#: whose documents could not be written)
OUR_FILES = re.compile(
    r"(performance\.json|(packets|ports|messages|nics|link_series)-\d+\.(parquet|csv)"
    r"|config-\d+\.py)")


# ---------------------------------------------------------------------- names, before the run
def shown(text: str) -> str:
    """A name as printable text: bytes that are not UTF-8 shown as ``\\xff``, a lone
    surrogate (which no file name holds) as ``\\ud800``."""
    try:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _name_problem(part: str) -> str | None:
    """Why ``part`` cannot be a file or folder name, or ``None``."""
    if "\0" in part:
        return "contains a NUL byte"
    try:
        part.encode("utf-8")
    except UnicodeEncodeError:
        return ("is not valid UTF-8 (plot, report and results.json need names that are text); "
                "choose a name in UTF-8")
    size = len(os.fsencode(part))
    if size > NAME_MAX:
        return (f"is {size} bytes long; a file or folder name may have at most {NAME_MAX} "
                f"bytes")
    return None


def check_out_path(path: str | Path, source: str) -> None:
    """Refuse an output path that no file system takes or that readers of the results cannot
    open (see :mod:`federation.results.outputs`), naming ``source`` (``--out``,
    ``FILE: outputs.dir``)."""
    text = os.fspath(path)
    if not text:
        raise ConfigError("is empty; give a file or folder name", source=source)
    for part in Path(text).parts:
        why = _name_problem(part)
        if why is not None:
            name = shown(part)
            if len(name) > 60:
                name = name[:40] + "..." + name[-12:]
            raise ConfigError(f"'{name}' {why}", source=source)


def check_name(name: str, source: str, field: str = "name") -> None:
    """Refuse an experiment ``name`` that cannot be used as one folder name (it becomes
    ``results/<name>``): a path (``/``), ``.`` or ``..``, or a name :func:`check_out_path`
    refuses.  Named by the file and the field."""
    text = shown(name)
    if not name.strip():
        raise ConfigError("is empty; the default output folder is results/<name>",
                          source=source, path=field)
    if "/" in name or name in (".", "..") or (os.sep != "/" and os.sep in name):
        raise ConfigError(f"'{text}' is not a plain name: the default output folder is "
                          "results/<name>, so it may not contain '/' or be '.' or '..' (give "
                          "--out or outputs.dir to write elsewhere)", source=source, path=field)
    why = _name_problem(name)
    if why is not None:
        if len(text) > 60:
            text = text[:40] + "..." + text[-12:]
        raise ConfigError(f"'{text}' {why}", source=source, path=field)


# ---------------------------------------------------------------------- what a path is
#: what a destination that is not a regular file or a folder is, for messages
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"),
          (stat.S_ISREG, "a regular file"))


def path_kind(mode: int) -> str:
    """``a character device``, ``a FIFO (named pipe)``, ...: what ``mode`` (``st_mode``) is."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def lstat_out(path: Path, source: str) -> os.stat_result | None:
    """The destination's own status (a link not followed), or ``None`` when it does not exist
    (nor a folder above it).  Only ``lstat``: never ``open``, which blocks on a FIFO and
    reads a device."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {os_reason(exc)}", source=source) from None


def link_refusal(path: Path, source: str) -> ConfigError:
    """Federation writes no links, so ``--overwrite`` never replaces one (it would drop the
    link, or with the link followed write somewhere the option does not name)."""
    try:
        to = f" (to {os.readlink(path)})"
    except OSError:
        to = ""
    return ConfigError(f"{path} is a symbolic link{to}; federation replaces only a regular "
                       "file or folder it could have written, never a link: give another name, "
                       "or the path it leads to", source=source)


def not_regular(path: Path, mode: int, source: str,
                advice: str = "choose another file") -> ConfigError:
    """The refusal of a destination file that exists and is not a regular file."""
    if stat.S_ISLNK(mode):
        return link_refusal(path, source)
    return ConfigError(f"{path} is {path_kind(mode)}, not a regular file; federation writes "
                       f"regular files and --overwrite replaces only one: {advice}",
                       source=source)


def not_a_folder(path: Path, mode: int) -> str:
    """The refusal of a destination folder that exists and is not one."""
    kind = "" if stat.S_ISREG(mode) else f": it is {path_kind(mode)}"
    return f"{path} exists and is not a folder{kind}"


def check_out_file(path: str | Path, source: str, overwrite: bool) -> os.stat_result | None:
    """Refuse, with ``lstat`` only, a file destination that cannot be written: a name ending
    in ``/`` (it names a folder), one :func:`check_out_path` refuses, a folder, anything but a
    regular file (a link, a device, a FIFO, a socket), an existing file without
    ``overwrite``.  Returns the existing file's status, or ``None``."""
    text = os.fspath(path)
    if text.endswith(("/", os.sep)) and text.strip("/" + os.sep):
        raise ConfigError(f"'{shown(text)}' ends in '/', which names a folder; give a file "
                          "name", source=source)
    p = Path(path)
    check_out_path(p, source)
    st = lstat_out(p, source)
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"{p} is a folder; give a file name", source=source)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(p, st.st_mode, source)
        if not overwrite:
            raise ConfigError(f"{p} exists; choose another file or pass --overwrite",
                              source=source)
    return st


def check_out_folder(path: Path, source: str) -> None:
    """Refuse, with ``lstat`` and ``stat`` only, a folder destination that files are added to
    (``plot --out``) that exists and is not a folder (a link to a folder is written into,
    like any folder above a destination).  The name is the caller's to check
    (:func:`check_out_path`): ``run --plot`` draws into the run's own folder, whatever its
    name."""
    st = lstat_out(path, source)
    if st is not None and not path.is_dir():
        raise ConfigError(not_a_folder(path, st.st_mode), source=source)


def is_results_name(name: str) -> bool:
    """Is ``name`` one of the files a results folder holds (``results.json``,
    ``performance.json``, a table, ``config-N.py``)?"""
    return name == "results.json" or OUR_FILES.fullmatch(name) is not None


def check_not_input(out: Path, source: str, *, files: Iterable[Path] = (),
                    results: Iterable[Path] = (), within: Iterable[Path] = (),
                    whole: bool = False) -> None:
    """Refuse an output that would replace what the command reads, comparing real paths
    (links and ``..`` resolved): one of ``files``; a results folder of ``results`` itself,
    or a file in it named as a results folder's own files are (:func:`is_results_name`; other
    names, such as ``report.html`` or ``plots``, are where the outputs go by default); or
    anything inside a folder of ``within`` (an input with no outputs of its own inside).

    ``whole``: ``out`` is a folder replaced whole (``run``'s), so one of ``files`` or
    ``within`` inside it is refused too: ``--overwrite`` of a results folder the user had
    put the experiment's machine file in removed the machine file with the old results."""
    files, within = list(files), list(within)
    real = Path(os.path.realpath(out))
    for folder in results:
        where = Path(os.path.realpath(folder))
        if real == where:
            same = "" if os.fspath(folder) == os.fspath(out) else f" ({folder})"
            raise ConfigError(f"{out} is the results folder this command reads{same}; "
                              "choose another place (a new folder inside it is fine)",
                              source=source)
        if real.parent == where and is_results_name(real.name):
            raise ConfigError(f"{out} is the {real.name} of the results folder {folder}, "
                              "which this command reads: writing it would replace the input; "
                              "choose another name", source=source)
    for f in files:
        if real == Path(os.path.realpath(f)):
            same = "" if os.fspath(f) == os.fspath(out) else f" ({f})"
            raise ConfigError(f"{out} is a file this command reads{same}: writing it would "
                              "replace the input; choose another name", source=source)
    for folder in within:
        where = Path(os.path.realpath(folder))
        if real == where or where in real.parents:
            raise ConfigError(f"{out} is inside {folder}, which this command reads; choose a "
                              "place outside it", source=source)
    if whole:
        for f in [*files, *within]:
            if real in Path(os.path.realpath(f)).parents:
                raise ConfigError(f"{out} holds {f}, which this command reads: the folder is "
                                  "replaced whole (--overwrite), the input with it; choose "
                                  "another place", source=source)
