"""DUMPI traces (as ``dumpi2ascii`` prints them) to rank programs.

DUMPI (sst-dumpi, the Design Forward traces the CODES paper replays) records every MPI call
of every rank; ``dumpi2ascii`` turns a rank's binary file into text, one block per call::

    MPI_Isend entering at walltime 8.000120000, cputime 0.000100000 seconds in thread 0.
    int count=512
    MPI_Datatype datatype=11 (MPI_DOUBLE)
    int dest=1
    int tag=7
    MPI_Comm comm=2 (MPI_COMM_WORLD)
    MPI_Request request=[3]
    MPI_Isend returning at walltime 8.000121000, cputime 0.000101000 seconds in thread 0.

(checked against sst-dumpi's ``dumpi/bin/dumpi2ascii-defs.h``).  :func:`read_dumpi` takes a
folder holding one such file per rank (the rank is the last number in each file's name:
``trace-0003.txt`` is rank 3; ranks 0 .. n-1 each once) or one file (one rank), and reads
them as streams (:mod:`federation.programs.reading`: regular files, bounded lines, the
operation budget).

===============================================  ===========================================
``MPI_Send``, ``Ssend``, ``Rsend``, ``Bsend``     blocking send of ``count x datatype`` bytes
``MPI_Recv``                                      blocking receive
``MPI_Isend`` (and ``Issend`` ...), ``Irecv``     non-blocking; the ``request`` id remembered
``MPI_Wait``, ``MPI_Waitall``                     the next call waits for those requests
``MPI_Sendrecv``                                  isend + irecv, then wait for both
``MPI_Barrier``, ``Bcast``, ``Reduce``,            the collective on MPI_COMM_WORLD by its
``Allreduce``, ``Allgather``, ``Alltoall``,        algorithm (:mod:`federation.programs.
``Alltoallv``, ``Gather``, ``Scatter``             collectives`; ``auto``: MPICH's choice)
``MPI_Init``, ``Finalize``, ``Comm_rank``, ...,   no operation
``MPI_Test*``                                     (a test completes nothing here)
===============================================  ===========================================

A collective's buffers are sized as MPI reads them, and split in whole elements of its
datatype (``auto`` counts elements, as MPICH does): ``count x datatype``; an allgather's and
an alltoall's receive side (``MPI_IN_PLACE`` leaves the send side unread), a gather's receive
side at its root and send side elsewhere, a scatter's send side at its root and receive side
elsewhere (the side MPI does not read may be ``0, MPI_DATATYPE_NULL``).

**Compute** is the gap between a call's return and the next call's entry (wall time, exact
to the nanosecond the file prints), times ``compute_scale``.  **Refused**, naming the file
and line: a call that is not in the table and moves data or waits (``MPI_Waitany``,
``Waitsome``, ``Probe``, persistent and one-sided calls: their outcome depends on timing;
CODES' replay excludes ``Waitany``/``Waitsome`` too), any communicator but MPI_COMM_WORLD
(``MPI_COMM_SELF`` collectives are no operation), wildcards (``MPI_ANY_SOURCE``,
``MPI_ANY_TAG``: receives match by source and tag), a datatype whose size is not known
(give ``datatype_sizes``), a wait on a request the rank did not start, a malformed block;
naming the parameter: an int parameter that is not a whole decimal number in ASCII digits as
``%d`` prints it (``count=1e3``, ``0x10``, ``4 elements``), a negative count, a number beyond a
C int (a tag too: tags are C ints in MPI and dumpi2ascii's output, and int32 in the programs'
``op_tag`` and the messages table; the engines match on channel numbers made from them), a
parameter given twice in one call, and, in a trace with collectives, an application tag of
:data:`COLLECTIVE_TAG` (2**30) or more, where the collectives' own tags are (refused when
both are read, at the tag's line, naming the collective; a trace without collective messages
takes any tag up to 2**31 - 1); and a walltime going backwards (a call entering before the
previous one returned, or returning before it entered).
An unmatched receive is refused by the checks every program passes
(:func:`~federation.programs.checks.check_programs`), with its file and line.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.programs.builder import ProgramBuilder, RankBuilder
from federation.programs.checks import MAX_MESSAGE_BYTES
from federation.programs.collectives import collective
from federation.programs.model import RECV, SEND, RankPrograms
from federation.programs.reading import max_ops as reading_max_ops
from federation.programs.reading import op_budget, quoted, shown, text_lines

#: bytes of the predefined datatypes, by the name dumpi2ascii prints (LP64 sizes)
DATATYPE_BYTES = {
    "MPI_CHAR": 1, "MPI_SIGNED_CHAR": 1, "MPI_UNSIGNED_CHAR": 1, "MPI_BYTE": 1,
    "MPI_WCHAR": 4, "MPI_SHORT": 2, "MPI_UNSIGNED_SHORT": 2, "MPI_INT": 4, "MPI_UNSIGNED": 4,
    "MPI_LONG": 8, "MPI_UNSIGNED_LONG": 8, "MPI_FLOAT": 4, "MPI_DOUBLE": 8,
    "MPI_LONG_DOUBLE": 16, "MPI_LONG_LONG_INT": 8, "MPI_LONG_LONG": 8,
    "MPI_UNSIGNED_LONG_LONG": 8, "MPI_PACKED": 1, "MPI_FLOAT_INT": 8, "MPI_DOUBLE_INT": 12,
    "MPI_LONG_INT": 12, "MPI_SHORT_INT": 6, "MPI_2INT": 8, "MPI_LONG_DOUBLE_INT": 20,
    "MPI_COMPLEX": 8, "MPI_DOUBLE_COMPLEX": 16, "MPI_LOGICAL": 4, "MPI_REAL": 4,
    "MPI_DOUBLE_PRECISION": 8, "MPI_INTEGER": 4, "MPI_2INTEGER": 8, "MPI_2COMPLEX": 16,
    "MPI_2DOUBLE_COMPLEX": 32, "MPI_2REAL": 8, "MPI_2DOUBLE_PRECISION": 16,
    "MPI_CHARACTER": 1, "MPI_INT8_T": 1, "MPI_INT16_T": 2, "MPI_INT32_T": 4,
    "MPI_INT64_T": 8, "MPI_UINT8_T": 1, "MPI_UINT16_T": 2, "MPI_UINT32_T": 4,
    "MPI_UINT64_T": 8, "MPI_C_BOOL": 1, "MPI_REAL4": 4, "MPI_REAL8": 8, "MPI_INTEGER4": 4,
    "MPI_INTEGER8": 8, "MPI_COMPLEX16": 16,
}
#: calls that neither move data nor wait: no operation (their time is not compute either)
NO_OP_PREFIXES = ("MPI_Init", "MPI_Finalize", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Wtime",
                  "MPI_Wtick", "MPI_Get_count", "MPI_Get_processor_name", "MPI_Type_",
                  "MPI_Op_", "MPI_Errhandler_", "MPI_Attr_", "MPI_Initialized",
                  "MPI_Finalized", "MPI_Get_version", "MPI_Abort", "MPI_Pcontrol",
                  "MPI_Test", "MPI_Request_free", "MPI_Comm_get_attr", "MPI_Query_thread",
                  "MPI_Error_", "MPI_Group_", "MPI_Info_", "MPI_Buffer_", "MPI_Address",
                  "MPI_Get_address", "MPI_Comm_set_errhandler", "MPI_Comm_get_name",
                  "MPI_Comm_set_name", "MPI_Comm_compare", "MPI_Comm_test_inter")
SENDS = {"MPI_Send", "MPI_Ssend", "MPI_Rsend", "MPI_Bsend"}
ISENDS = {"MPI_Isend", "MPI_Issend", "MPI_Irsend", "MPI_Ibsend"}
COLLECTIVE_CALLS = {"MPI_Barrier": "barrier", "MPI_Bcast": "bcast", "MPI_Reduce": "reduce",
                    "MPI_Allreduce": "allreduce", "MPI_Allgather": "allgather",
                    "MPI_Alltoall": "alltoall", "MPI_Alltoallv": "alltoallv",
                    "MPI_Gather": "gather", "MPI_Scatter": "scatter"}
#: first tag of the collectives: MPI gives them a context of their own, tags from here up
#: (one per step of an algorithm) stand in for it, so in a trace with collectives an
#: application tag must stay below (MPI guarantees 32767, MPI_TAG_UB); without collectives
#: nothing uses the range and tags go up to a C int's limit
COLLECTIVE_TAG = 1 << 30
#: numbers are ASCII digits ([0-9]: \d also matches '١', which int() reads as 1)
#: a call's name is at most 64 characters (MPI's longest are about 30): it is named in every
#: refusal about the call, and a line may be a million characters long
_ENTER = re.compile(r"^(MPI_\w{1,60}) entering at walltime ([0-9]{1,15})\.([0-9]{1,9}),")
_RETURN = re.compile(r"^(MPI_\w{1,60}) returning at walltime ([0-9]{1,15})\.([0-9]{1,9}),")
_PARAM = re.compile(r"^[\w ]+?\b(\w+)(?:\[[^\]]*\])*=(.*)$")
#: an int parameter as dumpi2ascii prints it (``%d``), whole: ``count=1e3`` was read as 1
_INT = re.compile(r"-?[0-9]+\Z")
#: the special values dumpi2ascii names: ``int source=-1 (MPI_ANY_SOURCE)``
_SPECIAL = re.compile(r"(-[0-9]+) \((?:MPI_ANY_SOURCE|MPI_ANY_TAG|MPI_ROOT)\)\Z")
#: parameters that may be negative (special values, refused with their own reason)
_SIGNED = frozenset({"dest", "source", "tag", "sendtag", "recvtag", "root"})
_TAGS = frozenset({"tag", "sendtag", "recvtag"})
_INT_MAX = 2**31 - 1  # a C int


class _OneRank:
    """A ProgramBuilder rank seen as the assembler's calls, keeping only rank ``r``'s part of
    a collective written for every rank (each rank's trace writes its own part)."""

    def __init__(self, rb: RankBuilder, n: int) -> None:
        self.rb, self.n_ranks, self.r = rb, n, rb.rank

    def op(self, ranks: np.ndarray, kind: int, peer: np.ndarray | int = -1,
           nbytes: np.ndarray | int = 0, tag: np.ndarray | int = 0,
           time_ps: np.ndarray | int = 0, *, blocking: bool = True) -> np.ndarray:
        ranks = np.asarray(ranks)
        out = np.full(ranks.shape[0], -1, dtype=np.int64)
        mine = np.flatnonzero(ranks == self.r)
        if mine.size:
            i = int(mine[0])
            pe, nb, tg = (int(np.broadcast_to(np.asarray(v), ranks.shape)[i])
                          for v in (peer, nbytes, tag))
            out[i] = self.rb._seq(kind, pe, nb, tg, 0, blocking)
        return out

    def begin_collective(self, ranks: np.ndarray) -> int:
        return self.rb.begin_collective()

    def end_collective(self, first: int) -> None:
        self.rb.end_collective(first)

    def wait(self, ranks: np.ndarray, handles: np.ndarray) -> None:
        for r, h in zip(np.asarray(ranks).tolist(), np.asarray(handles).tolist(), strict=True):
            if r == self.r:
                self.rb.wait(h)


class _RankTrace:
    """One rank's file, replayed call by call into its builder."""

    def __init__(self, rb: RankBuilder, n: int, path: Path, reader: _Reader) -> None:
        self.rb, self.n, self.path, self.rd = rb, n, path, reader
        self.requests: dict[int, int] = {}
        self.last_return: int | None = None  # ns
        self.return_line = 0  # the line of the last call's return
        self.return_text = ""  # its walltime as printed
        self.at = 0  # the line of the last number read (for refusals)

    def fail(self, line: int, message: str) -> ConfigError:
        return ConfigError(f"line {line}: {message}", source=str(self.path))

    def run(self) -> None:
        call: str | None = None
        params: dict[str, tuple[str, int]] = {}
        start = 0
        enter_ns = 0
        enter_text = ""
        for first, lines in text_lines(self.path, "DUMPI trace"):
            for no, raw in enumerate(lines, first):
                line = raw.strip()
                if not line:
                    continue
                if call is None:
                    m = _ENTER.match(line)
                    if m is None:
                        raise self.fail(no, f"expected 'MPI_... entering at walltime ...', "
                                        f"got {quoted(line, 80)}")
                    call, start, params = m.group(1), no, {}
                    enter_ns, enter_text = _walltime(m)
                    self.gap(enter_ns, enter_text, call, start)
                    continue
                m = _RETURN.match(line)
                if m is not None:
                    if m.group(1) != call:
                        raise self.fail(no, f"{m.group(1)} returns inside {call} (line "
                                        f"{start})")
                    ret_ns, ret_text = _walltime(m)
                    if ret_ns < enter_ns:
                        raise self.fail(no, f"{call} returns at walltime {ret_text}, before it "
                                        f"entered (line {start}, walltime {enter_text}): "
                                        "walltimes must not go backwards")
                    self.call(call, params, start)
                    self.last_return, self.return_text, self.return_line = ret_ns, ret_text, no
                    call = None
                    continue
                if line.startswith("Perfcounters:"):
                    continue
                p = _PARAM.match(line)
                if p is None:
                    raise self.fail(no, f"not a parameter of {call}: {quoted(line, 80)}")
                name = p.group(1)
                if name in params:  # the last one silently won
                    raise self.fail(no, f"{call}: a second {quoted(name)} (the first is at line "
                                    f"{params[name][1]}): which one the call had is unknown")
                params[name] = (p.group(2).strip(), no)
        if call is not None:
            raise self.fail(start, f"{call} never returns (a truncated trace?)")

    def gap(self, enter_ns: int, enter_text: str, call: str, line: int) -> None:
        """The compute between the last call's return and ``call``'s entry (at ``line``),
        labelled with ``call``'s line.  A gap the engine's clock cannot hold is refused here,
        naming the file, both lines and, when the scale makes it so, ``compute_scale``: as a
        bare number it overflowed int64 and was refused without either.  An entry before the
        last return (a walltime going backwards) is refused: its compute was dropped."""
        if self.last_return is None or enter_ns == self.last_return:
            return
        if enter_ns < self.last_return:
            raise self.fail(line, f"{call} enters at walltime {enter_text}, before the previous "
                            f"call returned (line {self.return_line}, walltime "
                            f"{self.return_text}): walltimes must not go backwards")
        ns = enter_ns - self.last_return
        scale = self.rd.compute_scale
        ps = ns * 1000 if scale == 1 else int(round(ns * 1000 * scale))
        if ps >= TIME_LIMIT_PS:
            if ns * 1000 < TIME_LIMIT_PS:  # the scale took it past the clock
                raise ConfigError(
                    f"{scale:g} turns the {ns} ns between the return at line "
                    f"{self.return_line} and {call} at line {line} of {self.path} into "
                    f"{ps:.4g} ps of compute (gap x 1000 x compute_scale), beyond "
                    f"{CLOCK_LIMIT}", path="workload.compute_scale")
            raise self.fail(line, f"{call} enters {ns} ns after the return at line "
                            f"{self.return_line}: that compute ({ps} ps) is beyond "
                            f"{CLOCK_LIMIT}")
        if ps > 0:
            self.rd.count(1, self.path, line)
            h = self.rb.compute_ps(ps)
            self.rb._annotate(h, "", line)

    # ------------------------------------------------------------------ parameters

    def value(self, params: dict[str, tuple[str, int]], name: str, call: str,
              line: int) -> tuple[str, int]:
        """A parameter's text and its line (the call's line when it is missing)."""
        return params.get(name, ("", line))

    def num(self, params: dict[str, tuple[str, int]], name: str, call: str, line: int) -> int:
        """An int parameter, whole: ASCII digits (``count=1e3``, ``0x10`` or ``4 elements``
        were read by their leading digits), a sign only where a special value may stand
        (:data:`_SIGNED`), within a C int; a tag of :data:`COLLECTIVE_TAG` or more is
        noted (:meth:`_Reader.high_tag`), refused if the trace has collectives."""
        if name not in params:
            raise self.fail(line, f"{call} without '{name}'")
        raw, at = params[name]
        self.at = at
        m = _SPECIAL.match(raw) if name in _SIGNED else None
        text = m.group(1) if m else raw
        if _INT.match(text) is None or (text[0] == "-" and name not in _SIGNED):
            want = "a whole decimal number" if name in _SIGNED else "a whole number >= 0"
            raise self.fail(at, f"{call}: {name}={quoted(raw)} is not {want} (in ASCII digits, "
                            "as dumpi2ascii prints an int)")
        v = int(text) if len(text) <= 12 else (-(2**40) if text[0] == "-" else 2**40)
        if name in _TAGS and v > _INT_MAX:
            raise self.fail(at, f"{call}: {name}={text[:24]} is above {_INT_MAX} (2**31 - 1), "
                            "the largest tag: tags are C ints, as MPI and dumpi2ascii have "
                            "them, and the programs keep them as int32")
        if not -_INT_MAX - 1 <= v <= _INT_MAX:
            raise self.fail(at, f"{call}: {name}={text[:24]} is beyond a C int "
                            f"({-_INT_MAX - 1} .. {_INT_MAX}), which dumpi2ascii prints")
        if name in _TAGS and v >= COLLECTIVE_TAG:
            self.rd.high_tag(self.path, at, f"{call}: {name}={v}")
        return v

    def numbers(self, params: dict[str, tuple[str, int]], name: str, call: str,
                line: int) -> list[int]:
        """A list parameter, ``[0, 1]``: whole numbers within a C int, counts >= 0."""
        raw, at = self.value(params, name, call, line)
        if not raw.startswith("["):
            raise self.fail(at, f"{call}: {name} is {shown(raw) or 'missing'} (a list is "
                            "needed)")
        self.at = at
        body = raw[1:-1].strip() if raw.endswith("]") else None
        items = [x.strip() for x in body.split(",")] if body else []
        counts = name.endswith("counts")
        if body is None or not all(_INT.match(x) and len(x) <= 11 and
                                   -_INT_MAX - 1 <= int(x) <= _INT_MAX and
                                   not (counts and x[0] == "-") for x in items):
            want = "whole numbers >= 0" if counts else "whole numbers"
            raise self.fail(at, f"{call}: {name}={quoted(raw, 60)} is not a list of {want} "
                            "within a C int, in ASCII digits ('[0, 1]')")
        return [int(x) for x in items]

    def dtype(self, params: dict[str, tuple[str, int]], name: str, call: str,
              line: int) -> int:
        raw, at = self.value(params, name, call, line)
        line = at
        m = re.match(r"(-?[0-9]{1,10}) \((.+)\)$", raw)
        if m is None:
            raise self.fail(line, f"{call}: {name} {quoted(raw)} is not 'id (name)'")
        ident, label = int(m.group(1)), m.group(2)
        if ident in self.rd.datatype_sizes:
            return self.rd.datatype_sizes[ident]
        if label in DATATYPE_BYTES:
            return DATATYPE_BYTES[label]
        raise self.fail(line, f"{call}: the size of datatype {ident} ({shown(label)}) is unknown; "
                        "give it in datatype_sizes")

    def world(self, params: dict[str, tuple[str, int]], call: str, line: int) -> bool:
        """True on MPI_COMM_WORLD, False on MPI_COMM_SELF; any other is refused."""
        raw, line = self.value(params, "comm", call, line)
        if "MPI_COMM_WORLD" in raw:
            return True
        if "MPI_COMM_SELF" in raw:
            return False
        raise self.fail(line, f"{call} on communicator {shown(raw) or '?'}: only MPI_COMM_WORLD is "
                        "read (the ASCII trace does not say who belongs to other "
                        "communicators)")

    def size(self, count: int, unit: int, call: str, line: int) -> int:
        b = count * unit
        if not 0 <= b < MAX_MESSAGE_BYTES:
            raise self.fail(line, f"{call}: {b} B is outside 0 .. 2**40 - 1")
        return b

    def rank_of(self, v: int, what: str, call: str, line: int) -> int:
        line = self.at
        if v < 0:
            raise self.fail(line, f"{call}: {what} {v} is a wildcard or MPI_PROC_NULL; "
                            "receives match by source and tag here, without wildcards")
        if v >= self.n:
            raise self.fail(line, f"{call}: {what} {v}, but the trace has ranks 0 to "
                            f"{self.n - 1}")
        return v

    # ------------------------------------------------------------------ calls

    def call(self, call: str, pr: dict[str, tuple[str, int]], line: int) -> None:
        rb = self.rb
        if call in SENDS or call in ISENDS or call in ("MPI_Recv", "MPI_Irecv"):
            send = call in SENDS or call in ISENDS
            if not self.world(pr, call, line):
                raise self.fail(line, f"{call} on MPI_COMM_SELF: a rank's message to itself")
            peer = self.rank_of(self.num(pr, "dest" if send else "source", call, line),
                                "dest" if send else "source", call, line)
            tag = self.num(pr, "tag", call, line)
            if tag < 0:
                raise self.fail(self.at, f"{call}: tag {tag} (MPI_ANY_TAG) is a wildcard")
            nb = self.size(self.num(pr, "count", call, line),
                           self.dtype(pr, "datatype", call, line), call, line)
            self.rd.count(1, self.path, line)
            kind = SEND if send else RECV
            if call in SENDS or call == "MPI_Recv":
                rb._seq(kind, peer, nb, tag, 0, True)
            else:
                h = rb._seq(kind, peer, nb, tag, 0, False)
                self.requests[self.numbers(pr, "request", call, line)[0]] = h
            self.label(line)
        elif call == "MPI_Sendrecv":
            if not self.world(pr, call, line):  # before dest and source, which would be
                # ranks of MPI_COMM_SELF (the caller itself) read as world ranks
                raise self.fail(line, f"{call} on MPI_COMM_SELF: a rank's message to itself")
            dst = self.rank_of(self.num(pr, "dest", call, line), "dest", call, line)
            src = self.rank_of(self.num(pr, "source", call, line), "source", call, line)
            st = self.size(self.num(pr, "sendcount", call, line),
                           self.dtype(pr, "sendtype", call, line), call, line)
            rt = self.size(self.num(pr, "recvcount", call, line),
                           self.dtype(pr, "recvtype", call, line), call, line)
            stag, rtag = self.num(pr, "sendtag", call, line), self.num(pr, "recvtag", call, line)
            if min(stag, rtag) < 0:
                raise self.fail(self.at, f"{call}: MPI_ANY_TAG is a wildcard")
            self.rd.count(2, self.path, line)
            hr = rb.irecv(src, rt, rtag)
            self.label(line)
            hs = rb.isend(dst, st, stag)
            self.label(line)
            rb.wait(hr, hs)
        elif call in ("MPI_Wait", "MPI_Waitall"):
            ids = self.numbers(pr, "request" if call == "MPI_Wait" else "requests", call, line)
            for i in ids:
                if i not in self.requests:
                    raise self.fail(self.at, f"{call}: request {i} was not started by an Isend "
                                    "or Irecv of this rank (or was already completed)")
                rb.wait(self.requests.pop(i))
        elif call in COLLECTIVE_CALLS:
            self.collective(COLLECTIVE_CALLS[call], call, pr, line)
        elif call.startswith(NO_OP_PREFIXES):
            return
        else:
            raise self.fail(line, f"{call} is not read (its effect depends on timing, or it "
                            "is not a call this reader models; see federation.programs.dumpi)")

    def label(self, line: int) -> None:
        rb = self.rb
        rb._annotate(len(rb.kind) - 1, f"{self.path.name}:{line}", line)

    def collective(self, op: str, call: str, pr: dict[str, tuple[str, int]],
                   line: int) -> None:
        if not self.world(pr, call, line):
            return
        root = self.num(pr, "root", call, line) if op in ("bcast", "reduce", "gather",
                                                         "scatter") else 0
        if not 0 <= root < self.n:
            raise self.fail(line, f"{call}: root {root} is not a rank of the trace")
        sizes = None
        nbytes, unit = 0, 1
        if op in ("bcast", "reduce", "allreduce"):
            unit = self.dtype(pr, "datatype", call, line)
            nbytes = self.size(self.num(pr, "count", call, line), unit, call, line)
        elif op in ("allgather", "alltoall", "gather", "scatter"):
            side = _counted_side(op, self.rb.rank == root)
            unit = self.dtype(pr, f"{side}type", call, line)
            nbytes = self.size(self.num(pr, f"{side}count", call, line), unit, call, line)
        elif op == "alltoallv":
            su = self.dtype(pr, "sendtype", call, line)
            ru = self.dtype(pr, "recvtype", call, line)
            sc = self.numbers(pr, "sendcounts", call, line)
            rc = self.numbers(pr, "recvcounts", call, line)
            if len(sc) != self.n or len(rc) != self.n:
                raise self.fail(line, f"{call}: sendcounts and recvcounts need {self.n} "
                                "entries (one per rank)")
            sizes = np.zeros((self.n, self.n), dtype=np.int64)
            sizes[self.rb.rank] = np.asarray(sc, dtype=np.int64) * su
            sizes[:, self.rb.rank] = np.asarray(rc, dtype=np.int64) * ru
        before = len(self.rb.kind)
        try:
            collective(_OneRank(self.rb, self.n), op, None, nbytes,
                       algorithm=self.rd.algorithms.get(op, "auto"), root=root,
                       tag=COLLECTIVE_TAG, datatype_size=max(unit, 1), sizes=sizes)
        except ConfigError as e:
            raise self.fail(line, f"{call}: {e.message}") from None
        for i in range(before, len(self.rb.kind)):
            self.rb._annotate(i, f"{self.path.name}:{line}", line)
        self.rd.count(len(self.rb.kind) - before, self.path, line)
        if len(self.rb.kind) > before:
            self.rd.collective_messages(self.path, line, call)


def _counted_side(op: str, at_root: bool) -> str:
    """Which of a rank's ``send``/``recv`` count and type MPI reads for its part of ``op``:
    the receive side of an allgather or alltoall (``MPI_IN_PLACE`` leaves the send side
    unread), a gather's at its root and a scatter's away from it; else the send side (a
    scatter's non-roots and a gather's root may pass ``0, MPI_DATATYPE_NULL`` there)."""
    if op in ("allgather", "alltoall"):
        return "recv"
    if op == "gather":
        return "recv" if at_root else "send"
    return "recv" if not at_root else "send"  # scatter


def _walltime(m: re.Match) -> tuple[int, str]:
    """An entry's or return's walltime: nanoseconds, and as printed (for messages)."""
    return int(m.group(2)) * 10**9 + int(m.group(3).ljust(9, "0")), f"{m.group(2)}.{m.group(3)}"


class _Reader:
    """What the ranks' files share while they are read: the options, the operation count,
    and the first application tag of :data:`COLLECTIVE_TAG` or more and the first collective
    that wrote messages (each alone is fine; the second of the two to be read is refused)."""

    def __init__(self, compute_scale: float, datatype_sizes: dict[int, int],
                 algorithms: dict[str, str], max_ops: int | None) -> None:
        self.compute_scale = compute_scale
        self.datatype_sizes = datatype_sizes
        self.algorithms = algorithms
        self.max_ops = max_ops
        self.ops = 0
        #: (file, line, "MPI_Isend: tag=...") of the first tag in the collectives' range
        self.first_high_tag: tuple[Path, int, str] | None = None
        #: (file, line, call) of the first collective that wrote messages
        self.first_collective: tuple[Path, int, str] | None = None

    def high_tag(self, path: Path, line: int, what: str) -> None:
        """An application tag of :data:`COLLECTIVE_TAG` or more (``what``: ``MPI_Isend:
        tag=...``) at ``line`` of ``path``: refused if a collective wrote messages before it,
        else remembered for the collectives still to come."""
        if self.first_collective is not None:
            raise self._clash((path, line, what), self.first_collective)
        if self.first_high_tag is None:
            self.first_high_tag = (path, line, what)

    def collective_messages(self, path: Path, line: int, call: str) -> None:
        """A collective at ``line`` of ``path`` wrote messages, tagged from
        :data:`COLLECTIVE_TAG` up: refused if an application tag there was read before."""
        if self.first_high_tag is not None:
            raise self._clash(self.first_high_tag, (path, line, call))
        if self.first_collective is None:
            self.first_collective = (path, line, call)

    @staticmethod
    def _clash(tag: tuple[Path, int, str], coll: tuple[Path, int, str]) -> ConfigError:
        """The refusal of a tag of 2**30 or more in a trace with collectives, at the tag's
        line: the collectives' messages are tagged from 2**30 up (MPI gives them a context of
        their own, which tags stand in for here), so an application message there could be
        paired with a collective's receive."""
        (tpath, tline, what), (cpath, cline, call) = tag, coll
        where = f"line {cline}" if cpath == tpath else f"{cpath.name} line {cline}"
        return ConfigError(
            f"line {tline}: {what} is above {COLLECTIVE_TAG - 1} (2**30 - 1), the largest "
            f"application tag in a trace with collectives ({call} at {where}): their messages "
            "are tagged from 2**30 up, standing in for MPI's separate context for collectives, "
            "and could be paired with this tag's; without collectives, tags up to 2**31 - 1 "
            "are read (MPI guarantees 32767, MPI_TAG_UB)",
            source=str(tpath))

    def count(self, k: int, path: Path, line: int) -> None:
        self.ops += k
        if self.max_ops is not None and self.ops > self.max_ops:
            budget = op_budget()
            where = f"line {line}: the trace reaches "
            if budget is not None and budget.max_ops == self.max_ops:
                raise budget.refuse(self.ops, str(path), where)
            raise ConfigError(f"{where}{self.ops:,} operations, beyond the {self.max_ops:,} "
                              "allowed", source=str(path))


def trace_files(path: Path, max_ranks: int | None = None) -> list[Path]:
    """The per-rank files of a folder, ordered by rank (the last number in each name), or
    ``[path]`` for a file."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ConfigError("no such DUMPI trace (a folder of per-rank files, or a file)",
                          source=str(path))
    by_rank: dict[int, Path] = {}
    for f in sorted(path.iterdir()):
        if not f.is_file() or f.name.startswith("."):
            continue
        nums = re.findall(r"[0-9]+", f.name)
        if not nums:
            raise ConfigError(f"{shown(f.name, 200)}: no rank number in the file name (rank "
                              "files are named like trace-0003.txt)", source=str(path))
        r = int(nums[-1])
        if r in by_rank:
            raise ConfigError(f"{shown(f.name, 200)} and {shown(by_rank[r].name, 200)} both "
                              f"name rank {r}", source=str(path))
        by_rank[r] = f
    if not by_rank:
        raise ConfigError("the folder holds no trace file", source=str(path))
    n = len(by_rank)
    missing = sorted(set(range(n)) - set(by_rank))
    if missing:
        raise ConfigError(f"{n} files, but no file for rank {missing[0]} (ranks must be 0 to "
                          f"{n - 1}, one file each)", source=str(path))
    if max_ranks is not None and n > max_ranks:
        raise ConfigError(f"{n} ranks, but the machine has {max_ranks} nodes",
                          source=str(path))
    return [by_rank[r] for r in range(n)]


def read_dumpi(path: str | Path, *, compute_scale: float = 1.0,
               datatype_sizes: dict[int, int] | None = None,
               algorithms: dict[str, str] | None = None, max_ranks: int | None = None,
               max_ops: int | None = None) -> RankPrograms:
    """Rank programs from ``dumpi2ascii`` output (see the module docstring).  Operations are
    labelled ``file:line``.  Check the result with
    :func:`~federation.programs.checks.check_programs`."""
    p = Path(path)
    if not compute_scale >= 0:
        raise ValueError(f"compute_scale must be >= 0, got {compute_scale}")
    files = trace_files(p, max_ranks)
    n = len(files)
    rd = _Reader(compute_scale, dict(datatype_sizes or {}), dict(algorithms or {}),
                 reading_max_ops(max_ops))
    b = ProgramBuilder(n)
    for r, f in enumerate(files):
        _RankTrace(b.rank(r), n, f, rd).run()
    progs = b.build(source=str(p))
    if p.is_dir():  # messages name each rank's file, not the folder
        progs.rank_source = [str(f) for f in files]
    return progs


__all__ = ["COLLECTIVE_TAG", "DATATYPE_BYTES", "read_dumpi", "trace_files"]
