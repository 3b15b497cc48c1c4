"""The audit's finding spool gives back exactly what it was given, cost-model inputs included, and each
finding's JSON text where the formats read it."""

from __future__ import annotations

import pytest

from kubegap.audit import spool as spool_module
from kubegap.audit.spool import Keep, Rows, Spool
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Finding
from kubegap.records import changed
from kubegap.reports.json import finding_text
from tests.test_evaluate import pytorchjob


def _findings() -> list[Finding]:
    return list(build_engine(Settings(cel_backend="cel-expr")).evaluate(pytorchjob()).findings)


def test_findings_come_back_equal_with_their_impact() -> None:
    findings = _findings()
    assert any(f.impact is not None for f in findings)  # priced findings hold nested dataclasses
    spool = Spool()
    spool.add(findings, "uid-1")
    spool.add(findings[:1], None)
    back = list(spool.rows())
    spool.close()
    assert [f for _, f in back] == [*findings, findings[0]]
    assert [uid for uid, _ in back] == ["uid-1"] * len(findings) + [None]


def test_the_json_texts_come_back_in_listing_order_beside_the_findings() -> None:
    findings = _findings()
    spool = Spool(Keep(findings=True, json=True))
    spool.add(findings, "uid-1")
    spool.add(findings[:1], None)
    joined, back = "".join(spool.joined()), list(spool.findings())
    spool.close()
    assert back == [*findings, findings[0]]
    assert joined == _listed(back) and len({finding_text(f) for f in back}) == len(findings)


def test_a_spool_gives_only_what_it_keeps() -> None:
    findings = _findings()
    texts_only, findings_only = Spool(Keep(findings=False, json=True)), Spool()
    for spool in (texts_only, findings_only):
        spool.add(findings)
    assert "".join(texts_only.joined()) == _listed(findings)
    with pytest.raises(RuntimeError, match="keeps no findings"):
        next(texts_only.findings())
    with pytest.raises(RuntimeError, match="keeps no JSON texts"):
        next(findings_only.joined())
    texts_only.close()
    findings_only.close()


@pytest.mark.parametrize(
    ("formats", "policyreports", "keep"),
    [
        (["json"], False, Keep(findings=False, json=True)),
        (["json", "json"], False, Keep(findings=False, json=True)),
        (["json"], True, Keep(findings=True, json=True)),
        (["text", "json"], False, Keep(findings=True, json=True)),
        (["text"], False, Keep(findings=True, json=False)),
        (["sarif", "policyreport"], False, Keep(findings=True, json=False)),
    ],
)
def test_the_spool_keeps_what_the_formats_read(formats: list[str], policyreports: bool, keep: Keep) -> None:
    assert Keep.for_formats(formats, policyreports) == keep


def test_rows_waiting_to_be_inserted_are_read_in_order() -> None:
    findings = _findings()
    spool = Spool(Keep(findings=True, json=True))
    added: list[Finding] = []
    for round_ in range(3):  # across the insert batch, and a read between adds
        for _ in range(spool_module._PENDING // len(findings) + round_):
            spool.add(findings)
            added += findings
        assert spool.count == len(added)
        assert list(spool.findings()) == added
        assert "".join(spool.joined()) == _listed(added)
    spool.close()


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1 << 20])
def test_texts_come_back_as_written_whatever_they_hold(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    # read in blocks that split every character, the line breaks and the separators somewhere
    monkeypatch.setattr(spool_module, "_BLOCK", block)
    messages = ("a\u2028b\u0085c", "x\ud800y", "é\r\nz😀")
    findings = [changed(f, message=m) for f in _findings() for m in messages]
    spool = Spool(Keep(findings=False, json=True))
    assert "".join(spool.joined()) == ""
    spool.add(findings[:1])
    assert "".join(spool.joined()) == finding_text(findings[0])
    spool.add(findings)
    assert "".join(spool.joined()) == _listed([findings[0], *findings])
    spool.close()


def _listed(findings: list[Finding]) -> str:
    """The JSON report's list of these findings, without its brackets."""
    return ", ".join(map(finding_text, findings))


def test_texts_a_worker_wrote_are_read_where_it_says_between_the_audits_own() -> None:
    findings = _findings()
    keep = Keep(findings=True, json=True)
    spool = Spool(keep)
    workers = [Rows(keep, spool.text_file()), Rows(keep, spool.text_file())]
    added: list[Finding] = []
    for round_ in range(3):
        # the two files taking turns at the same offsets, then a run of one file (a chunk)
        turns = [(rows, f) for f in findings[round_:] for rows in workers]
        for rows, finding in turns + [(workers[round_ % 2], f) for f in findings]:
            made, span = rows.made([finding])
            assert span is not None and made[0][5] is None, "the text is in the file, not the row"
            spool.add_rows(made, None, span)
            added.append(finding)
        spool.add(findings[:2])
        added += findings[:2]
    assert workers[0].made([]) == ((), None)
    for rows in workers:
        rows.flush()
    assert "".join(spool.joined()) == _listed(added)
    assert list(spool.findings()) == added
    spool.close()
