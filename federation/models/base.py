"""Base of every schema model, and the YAML/JSON file loader with located error messages."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)

from federation.errors import ConfigError

M = TypeVar("M", bound="FederationModel")

#: tags of discriminated unions (e.g. machine: path or inline), left out of error paths
UNION_TAGS = ("machine-file", "inline-machine")
#: the labels pydantic gives the members of an untagged union in an error's location
#: (``parallel: int | list[int]`` refused as ``parallel.constrained-int`` and
#: ``parallel.list[constrained-int]``): not fields, so not shown
_UNION_MEMBER = re.compile(r"^(constrained-)?(int|float|str|bool|none)$|^[a-z-]+\[.*\]$")


class FederationModel(BaseModel):
    """Frozen, strict about unknown keys: a typo in a file is an error, not a silent default."""

    # defer_build: a model's validator is built when it first validates; a run uses a dozen of
    # the hundred-odd models the plugins define (50 ms and 2 MB less per process)
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True,
                              defer_build=True)


class DocumentModel(FederationModel):
    """A model read from a user's file: no silent coercion.

    ``strict``: ``p: true`` is not the integer 1 and ``"4"`` is not 4 (pydantic's lax mode
    converts both); a number where a whole number is expected must be one.  ``allow_inf_nan``
    off: a ``.nan`` load or ``.inf`` size is refused as "not a finite number" instead of failing
    a comparison later with a misleading bound.
    """

    model_config = ConfigDict(strict=True, allow_inf_nan=False)


class Params(DocumentModel):
    """Base of a component's parameter model (a plugin's ``Params``)."""


#: the version of machine and experiment files this code reads
SCHEMA_VERSION = 1


def _check_schema_version(v: int) -> int:
    if v != SCHEMA_VERSION:
        raise ValueError(
            f"this version of federation reads schema_version {SCHEMA_VERSION} files, the file "
            f"says {v} (written for another version?)")
    return v


#: ``schema_version`` field of machine and experiment files: refused unless known
SchemaVersion = Annotated[int, AfterValidator(_check_schema_version),
                          WithJsonSchema({"const": SCHEMA_VERSION, "type": "integer"})]


def _resolve_path(v: str, info: ValidationInfo) -> str:
    if not v.strip():
        raise ValueError("path is empty")
    base = (info.context or {}).get("base_dir")
    if base is None or Path(v).is_absolute():
        return v
    return str(Path(base) / v)


#: a file named inside a machine or experiment file: relative to *that* file, wherever the run
#: starts (the loader passes the file's folder as the validation context ``base_dir``)
DocumentPath = Annotated[str, AfterValidator(_resolve_path)]


# --------------------------------------------------------------------------- reading files

#: deepest nesting read from a file; real files nest a few levels, and Python's recursion limit
#: (parsers, validation, copies) is met around 1,000
MAX_DEPTH = 100
#: most values a file may hold once YAML's aliases are expanded (every later stage sees the
#: expansion: a 400-byte file of anchors aliasing each other nine times over ten levels holds
#: 3.5e9); the largest real inputs (a 2,048 x 2,048 alltoallv matrix) hold a few million
MAX_VALUES = 20_000_000
_YAML_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


_BOOL, _STR = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:str"


class _Rules:
    """YAML 1.1 safe loading with four YAML 1.2 rules: ``5e9`` and ``1e-7`` are numbers (1.1
    reads exponents without a dot or sign as strings), integers are 1.2's (``_YAML_INT``), a
    key given twice in one mapping is an error (1.1 keeps the last silently), and a mapping
    key ``on``/``off``/``yes``/``no`` is a string (1.1 reads it as a boolean).  The rules are
    the constructor's and resolver's, which both loaders below share."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            # YAML 1.2: a key ``on``, ``off``, ``yes`` or ``no`` is a string (1.1 reads a
            # boolean, so on_off's ``on:`` would reach the model as ``True``)
            if key_node.tag == _BOOL and key_node.value.lower() not in ("true", "false"):
                key_node.tag = _STR
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise ConfigError(f"duplicate key {key!r} at line {line} (first at line "
                                      f"{seen[key]}): a key may appear once in a mapping")
                seen[key] = line
            except TypeError:  # an unhashable key: the base class reports it
                continue
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


class _Loader(_Rules, yaml.SafeLoader):
    """The rules on PyYAML's pure-Python parser: its refusals are the ones a user reads."""


class _FastLoader(_Rules, yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):
    """The rules on libyaml's parser (PyYAML's binding), three times as fast on long files
    (a 50,000-message ``messages:`` list, an alltoallv matrix); a file it refuses is parsed
    again by :class:`_Loader`, so that the refusal's words and line are PyYAML's."""


_INT = "tag:yaml.org,2002:int"
#: YAML 1.2's integers (and 1.1's underscores): ``010`` is ten, not 1.1's octal eight (``0o10``
#: is eight), and ``1:20`` is text, not 1.1's base-60 eighty; either read silently as another
#: number would run another experiment (``seed: 010``)
_YAML_INT = re.compile(r"^[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)$")
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _INT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789"))
_Loader.add_implicit_resolver(_INT, _YAML_INT, list("-+0123456789"))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
    base = {"0b": 2, "0o": 8, "0x": 16}.get(body[:2])
    return sign * (int(body[2:], base) if base else int(body))  # 010: decimal, as YAML 1.2


_Loader.add_constructor(_INT, _construct_int)
_FastLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
_FastLoader.add_constructor(_INT, _construct_int)


def read_document(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON file into a mapping; every failure is a :class:`ConfigError`.

    A UTF-8 byte-order mark is skipped; a key given twice, or nesting deeper than
    :data:`MAX_DEPTH`, is refused.
    """
    p = Path(path)
    if not p.exists():
        raise ConfigError("file not found", source=str(path))
    if p.is_dir():
        raise ConfigError("is a directory, expected a YAML or JSON file", source=str(path))
    if not p.is_file():  # a FIFO would block the read until a writer came, a device never end
        raise ConfigError("is not a regular file (a pipe, device or socket), expected a YAML "
                          "or JSON file", source=str(path))
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", source=str(path)) from None
    data = _parse(text, p.suffix.lower() == ".json", str(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping at the top level, got {type(data).__name__}",
                          source=str(path))
    return data


def parse_value(text: str, source: str | None = None, path: str | None = None) -> Any:
    """``text`` read exactly as the value after ``key:`` in a YAML file is (``5e8`` a number,
    ``.3`` a number, empty null, ``[1, 2]`` a list, a key twice in a mapping refused), for
    values given outside a file (``--set``); a NaN or infinity anywhere in it is refused, as
    the models refuse it in a file.  Errors name ``source`` and ``path``."""
    try:
        value = _parse(text, False, source or "")
    except ConfigError as exc:
        raise ConfigError(exc.message, source=source, path=path) from None
    bad = non_finite(value, path or "")
    if bad is not None:
        raise ConfigError(f"{bad[1]!r} is not a finite number (NaN and infinities are refused "
                          "here as in files)", source=source, path=bad[0])
    return value


def non_finite(data: Any, path: str = "") -> tuple[str, float] | None:
    """The first NaN or infinity in parsed data, with its dotted path (``a.b[2]``), or
    ``None``; iterative, since the data may be deep."""
    stack: list[tuple[str, Any]] = [(path, data)]
    while stack:
        where, x = stack.pop()
        if isinstance(x, float) and not math.isfinite(x):
            return where or "(top level)", x
        if isinstance(x, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in x.items())
        elif isinstance(x, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(x))
    return None


def _parse(text: str, is_json: bool, source: str) -> Any:
    try:
        if is_json:
            data = json.loads(text, object_pairs_hook=unique_keys)
        else:
            data = _load_yaml(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON at line {exc.lineno}: {exc.msg}", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses: no mark
            where = f" at line {text.count(chr(10), 0, exc.position) + 1}"
        raise ConfigError(f"invalid YAML{where}: {problem}", source=source) from None
    except ConfigError as exc:
        raise ConfigError(exc.message, source=source) from None
    except DuplicateKey as exc:
        raise ConfigError(f"duplicate key {exc.key!r}: a key may appear once in an object",
                          source=source) from None
    except RecursionError:
        raise _too_deep(source) from None
    except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
        kind = "JSON" if is_json else "YAML"
        what = ("an integer of more than 4,300 digits" if "digits" in str(exc) else str(exc))
        raise ConfigError(f"invalid {kind}: {what}", source=source) from None
    depth, values = _shape(data)
    if depth > MAX_DEPTH:
        raise _too_deep(source)
    if values > MAX_VALUES:
        raise ConfigError(f"holds {values:,} values once its aliases are expanded, more than the "
                          f"{MAX_VALUES:,} a file may hold (a YAML alias repeats its anchor's "
                          "values)", source=source)
    return data


def _load_yaml(text: str) -> Any:
    """``text`` read by :class:`_FastLoader`, or, where libyaml refuses it, by
    :class:`_Loader` (which refuses it in PyYAML's words, or reads it)."""
    try:
        return yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def _too_deep(source: str) -> ConfigError:
    return ConfigError(f"nested deeper than {MAX_DEPTH} levels; a machine or experiment file "
                       "nests a few", source=source)


class DuplicateKey(ValueError):
    """A key given twice in one JSON object (``json`` keeps the last silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s ``object_pairs_hook`` that refuses a key given twice (:class:`DuplicateKey`;
    every JSON file read here: experiment and machine files, graph files)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def _shape(data: Any) -> tuple[int, int]:
    """``(depth, values)``: the nesting depth of lists and mappings and the number of values
    the data holds with YAML's aliases expanded, each shared list or mapping walked once
    (a walk of the expansion took hours on a small file of aliases); without recursion, the
    data may be deep.  A list or mapping inside itself (a recursive alias) is infinitely
    deep: ``MAX_DEPTH + 1``."""
    done: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        item, children_done = stack.pop()
        if not isinstance(item, dict | list) or id(item) in done:
            continue
        inner = [x for x in (item.values() if isinstance(item, dict) else item)
                 if isinstance(x, dict | list)]
        if not children_done:
            if id(item) in open_:
                continue  # pushed twice before it finished: the first push finishes it
            open_.add(id(item))
            stack.append((item, True))
            for x in inner:
                if id(x) in open_ and id(x) not in done:
                    return MAX_DEPTH + 1, 0  # a cycle
                stack.append((x, False))
            continue
        depth = 1 + max((done[id(x)][0] for x in inner), default=0)
        if depth > MAX_DEPTH:
            return depth, 0
        done[id(item)] = (depth, len(item) + sum(done[id(x)][1] for x in inner))
    return done[id(data)] if id(data) in done else (0, 0 if data is None else 1)


def format_loc(loc: tuple[Any, ...], prefix: str = "") -> str:
    """Turn a pydantic error location into a dotted field path (``topology.p``, ``jobs[0]``)."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # pydantic adds validator names for function validators; they are noise to users
            if (part.startswith("function-") or part in ("tagged-union", *UNION_TAGS)
                    or _UNION_MEMBER.match(part)):
                continue
            out = f"{out}.{part}" if out else str(part)
    return out


class FieldValueError(ValueError):
    """A model validator's refusal of one field below the model (``links.local.buffer``):
    :func:`validation_error` names that field, where a plain ``ValueError`` from a validator
    of the whole model is at the model's own place (``(top level)`` for a machine file)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def validation_error(exc: ValidationError, source: str | None, prefix: str = "") -> ConfigError:
    """Convert a pydantic error into one :class:`ConfigError` that names file and field paths.

    All problems are listed (one per line) so a user fixes a file in one pass.
    """
    lines = []
    first_path = None
    last_union = None  # the path of the last problem found in a member of an untagged union
    for err in exc.errors(include_url=False):
        below = (err.get("ctx") or {}).get("error")
        loc = tuple(err["loc"]) + (tuple(below.field.split(".")) if isinstance(
            below, FieldValueError) else ())
        path = format_loc(loc, prefix) or "(top level)"
        union = any(isinstance(x, str) and _UNION_MEMBER.match(x) for x in err["loc"])
        first_path = first_path or path
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif isinstance(err.get("input"), bool) and err["type"] in ("int_type", "float_type"):
            kind = "a whole number" if err["type"] == "int_type" else "a number"
            msg = f"expected {kind}, got {str(err['input']).lower()}"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        elif msg.startswith("Assertion failed, "):
            msg = msg[len("Assertion failed, "):]
        if union and last_union == path:  # another member of the same union
            lines[-1] += " or " + (msg[len("Input should be "):]
                                   if msg.startswith("Input should be ") else msg)
            continue
        last_union = path if union else None
        lines.append(f"{path}: {msg}")
    if len(lines) == 1:
        return ConfigError(lines[0].split(": ", 1)[1], source=source, path=first_path)
    return ConfigError("\n  " + "\n  ".join(lines), source=source)


def validate_model(model: type[M], data: Any, source: str | None, prefix: str = "",
                   base_dir: str | None = None) -> M:
    """Validate ``data`` as ``model``; errors name ``source`` and the field path.

    Paths in the data (:data:`DocumentPath` fields) are resolved against ``base_dir``, by
    default the folder of ``source`` (a nested component's parameters, whose errors name no
    file yet, give the folder of the file they were read from).
    """
    base = base_dir if base_dir is not None else \
        str(Path(source).absolute().parent) if source and source != "--set" else None
    try:
        return model.model_validate(data, context={"base_dir": base})
    except ValidationError as exc:
        raise validation_error(exc, source, prefix) from None
