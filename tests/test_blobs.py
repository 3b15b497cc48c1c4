"""Findings pickled by constructor arguments (kubegap.blobs) come back equal, each blob alone."""

from __future__ import annotations

import dataclasses
import enum
import pickle

from kubegap.blobs import Blobs
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Result, Severity
from kubegap.impact import Inputs, Term
from tests.test_evaluate import pytorchjob


def test_each_finding_is_stored_alone_and_reads_with_plain_pickle() -> None:
    engine = build_engine(Settings(cel_backend="cel-expr"))
    findings = engine.evaluate(pytorchjob()).findings
    pickler = Blobs()
    blobs = [pickler.dumps(f) for f in findings]
    assert len(blobs) > 1
    assert [pickle.loads(b) for b in blobs] == list(findings)  # no blob refers to another's memo


def test_cost_model_inputs_come_back_equal_with_every_field_set() -> None:
    """Inputs are pickled field by field (kubegap.blobs._flat_inputs): a field added to Inputs must be
    added there too, and this test names them all so that it fails until it is."""
    assert [f.name for f in dataclasses.fields(Inputs)] == [
        "gpus", "failures_per_gpu_hour", "detection", "restart", "interval", "runtime", "save", "tax",
        "from_scratch",
    ]  # fmt: skip
    d, r, i, t, s = (
        Term(hours, source) for hours, source in ((0.5, "d"), (0.25, "r"), (2, "i"), (720, "t"), (0.1, "s"))
    )
    every = Inputs(64, 2e-5, d, r, i, t, s, 0.07, True)
    no_interval = dataclasses.replace(every, interval=None, tax=0.0, from_scratch=False)
    pickler = Blobs()
    for inputs in (every, no_interval):
        assert pickle.loads(pickler.dumps(inputs)) == inputs


class Flag(enum.IntFlag):
    A = 1
    B = 2


def test_enum_members_come_back_as_themselves_named_or_not() -> None:
    pickler = Blobs()
    for member in (*Severity, *Result, Flag.A, Flag.A | Flag.B):  # A|B has no name of its own
        assert pickle.loads(pickler.dumps(member)) is member
