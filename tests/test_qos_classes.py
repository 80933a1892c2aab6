"""Traffic classes reach packets and results (issue 22, items 2 and 3): classification by job
(``jobs[i].class``), by the operation that sent a packet (``class_by``), by a workload's own
field; the packets table's ``class`` column, per-class figures in the summary, the ports
table's per-class columns, and the link series (sampling changes no figure).

The QoS mechanism itself is another branch's; here a test-only policy with two classes
(``twoclass``: ``high``, ``low``) makes the engine count per class.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import yaml
from conftest import REPO, one_error, run_cli

from federation import Params, QosPolicy, hookimpl
from federation.pipeline.load import load_experiment
from federation.pipeline.run import run_experiment
from federation.plugin.registry import get_plugins

QUICK = str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")  # 72 nodes
STOP = {"warmup": "0us", "measure": "3us"}
TWO = {"kind": "twoclass"}


class TwoClasses(QosPolicy):
    """Two classes by name; the policy's own class of every message is ``low`` (1)."""

    name = "twoclass"

    class Params(Params):
        pass

    def class_names(self) -> list[str]:
        return ["high", "low"]

    def traffic_class(self, messages):  # noqa: ANN001, ANN201
        return np.ones(messages.count, dtype=np.int16)


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(TwoClasses)


#: a module holding the hook, importable by a CLI subprocess too (see ``SITE``)
PLUGIN_SOURCE = '''
import numpy as np
from federation import Params, QosPolicy, hookimpl


class TwoClasses(QosPolicy):
    name = "twoclass"

    class Params(Params):
        pass

    def class_names(self):
        return ["high", "low"]

    def traffic_class(self, messages):
        return np.ones(messages.count, dtype=np.int16)


@hookimpl
def federation_register_qos(register):
    register(TwoClasses)
'''


@pytest.fixture(scope="module", autouse=True)
def two_classes() -> None:
    plugins = get_plugins()
    if "twoclass" not in plugins.qos.names():
        mod = types.ModuleType("qos_twoclass_test")
        mod.federation_register_qos = federation_register_qos
        sys.modules[mod.__name__] = mod
        plugins.add(mod, "twoclass-test")


def machine(qos: dict | None = None) -> dict:
    doc = yaml.safe_load(open(QUICK).read())
    if qos is not None:
        doc["qos"] = qos
    return doc


def run(tmp_path, doc: dict, name: str = "e.yaml"):  # noqa: ANN201
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    loaded = load_experiment(path)
    result = run_experiment(loaded, tmp_path / f"out-{name}", overwrite=True)
    return result, tmp_path / f"out-{name}"


def table(folder, name: str, i: int = 0) -> dict:
    import pyarrow.parquet as pq

    return pq.read_table(folder / f"{name}-{i}.parquet").to_pydict()


ALLREDUCE = {"kind": "allreduce", "size": "2KiB", "iterations": 2}
PINGPONG = {"kind": "pingpong", "sizes": [4096], "iterations": 3, "nodes": [0, 1]}


def test_classes_by_job_every_packet_of_a_job_in_its_class(tmp_path):
    """Mechanism I: an allreduce job in ``high``, a ping-pong job in ``low``, a background
    without a class of its own in the policy's class (``low``): the packets table's class of
    every packet is its job's."""
    doc = {"machine": machine(TWO), "stop": STOP, "jobs": [
        {"name": "ar", "class": "high", "workload": ALLREDUCE,
         "placement": {"kind": "contiguous", "count": 8}},
        {"name": "pp", "class": "low", "workload": PINGPONG,
         "placement": {"kind": "list", "nodes": [40, 41]}},
        {"name": "bg", "workload": {"kind": "synthetic", "load": 0.1}, "placement": "rest"}]}
    result, out = run(tmp_path, doc)
    pk = table(out, "packets")
    job = np.array(pk["job"])
    cls = np.array(pk["class"])
    assert set(cls[job == "ar"].tolist()) == {0}
    assert set(cls[job == "pp"].tolist()) == {1}
    assert set(cls[job == "bg"].tolist()) == {1}
    assert (job == "ar").sum() > 0 and (job == "pp").sum() > 0
    classes = result.points[0].summary.classes
    assert [c.name for c in classes] == ["high", "low"]
    assert classes[0].packets == int((job == "ar").sum())
