from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kubegap import fieldpath, forked, lint, manifests, yamlguard
from kubegap.config import Settings
from kubegap.enginerules import NOT_EVALUATED
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Finding, Result, Severity, worst
from kubegap.reports.json import finding_text, workload_text

DATA = Path(__file__).parent / "data" / "engine"
TRAIN = DATA / "train.yaml"
WORKER = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]"


@pytest.fixture(scope="module")
def engine() -> Engine:
    return build_engine(Settings(cel_backend="cel-expr"))


def where(
    findings: list[Finding],
) -> dict[tuple[str, str], tuple[str | None, int | None, int | None, int | None]]:
    return {(f.policy, f.rule): (f.path, f.document, f.line, f.column) for f in findings}


def test_positions_point_at_the_offending_field(engine: Engine) -> None:
    report = lint.lint([str(TRAIN)], engine)
    assert where(report.findings) == {
        ("restart-budget", "auto-restart"): ("spec.runPolicy.backoffLimit", 1, 19, 5),
        ("nccl-timeout", "timeout-bounded"): (f"{WORKER}.args[0]", 1, 30, 19),
        ("checkpoint-interval", "interval-bounded"): (f"{WORKER}.args[1]", 1, 31, 19),
        ("gpu-nic-topology", "no-transport-fallback"): (f"{WORKER}.env[1]", 1, 36, 19),
        ("nccl-timeout", "async-error-handling"): (f"{WORKER}.env[2]", 1, 38, 19),
        ("nccl-flight-recorder", "recorder-on"): (WORKER, 1, 26, 15),  # nothing set: the container
    }
    assert {f.file for f in report.findings} == {str(TRAIN)}
    lines = TRAIN.read_text().splitlines()
    for finding in report.findings:
        assert finding.line is not None and finding.column is not None
        text = lines[finding.line - 1][finding.column - 1 :]
        assert text.strip(), finding  # the position is on the field, not past the end of the line


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each text kubegap.yamlguard parses from here on (until `monkeypatch.undo()`), in turn."""
    parsed: list[str] = []

    class Counting(yamlguard.FAST_LOADER):  # type: ignore[misc,name-defined]
        def __init__(self, text: str) -> None:
            parsed.append(text)
            super().__init__(text)

    monkeypatch.setattr(yamlguard, "FAST_LOADER", Counting)
    return parsed


def test_a_long_stream_is_located_without_parsing_a_document_twice(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lint evaluates a batch of documents, then locates their findings, holding the batch's graphs: past
    the few graphs kubegap.yamlguard keeps, no document is parsed again, and every place is the one a
    fresh parse of its document gives."""
    one = TRAIN.read_text()  # a ConfigMap and a PyTorchJob
    copies = lint.BATCH_DOCUMENTS + 7  # two batches and a bit of a third
    stream = "---\n".join(f"# copy {i}\n" + one.replace("name: llm", f"name: llm-{i}") for i in range(copies))
    parsed = _parses(monkeypatch)
    read = manifests.Reader().read_bytes(stream.encode(), "long.yaml")
    report = lint.lint_documents(read, engine, known={})  # as lint has them: no need to read all first
    monkeypatch.undo()
    assert len(parsed) == 2 * copies and len(set(parsed)) == len(parsed)  # each document parsed once
    assert {f.document for f in report.findings} == set(range(1, 2 * copies, 2))  # every PyTorchJob's
    documents = list(manifests.Reader().read_bytes(stream.encode(), "long.yaml"))
    for finding in report.findings:
        assert finding.path is not None and finding.document is not None
        doc = documents[finding.document]
        loader = yamlguard.FAST_LOADER(doc.text)  # a fresh parse of the document alone
        fresh = loader.get_single_node()
        loader.dispose()
        assert (finding.line, finding.column) == manifests.locate(doc, fieldpath.parse(finding.path), fresh)


def test_batches_are_bounded_by_documents_and_by_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def sizes(texts: list[str]) -> list[int]:
        stream = "---\n".join(texts).encode()
        return [len(b) for b in lint._batches(manifests.Reader().read_bytes(stream, "x.yaml"))]

    small = "kind: A\napiVersion: v1\nmetadata: {name: a}\n"
    assert sizes([small] * (2 * lint.BATCH_DOCUMENTS + 1)) == [lint.BATCH_DOCUMENTS] * 2 + [1]
    monkeypatch.setattr(lint, "BATCH_TEXT", 3 * len(small))
    assert sizes([small] * 7) == [3, 3, 1]
    items = "apiVersion: v1\nkind: List\nitems:\n" + "- {apiVersion: v1, kind: A, metadata: {name: a}}\n" * 5
    monkeypatch.setattr(lint, "BATCH_TEXT", 2 * len(items) + len(small))
    assert sizes([items, items, small, small]) == [11, 1]  # a List's items share one text, counted once


def test_configmaps_in_the_input_resolve_env(engine: Engine) -> None:
    """Without the ConfigMap, TORCH_NCCL_ASYNC_ERROR_HANDLING cannot be seen: a forbid rule passes, listed."""
    text = TRAIN.read_text()
    without = text.split("---\n", 1)[1]
    with_cm = lint.lint_documents(manifests.Reader().read_bytes(text.encode(), "t.yaml"), engine)
    alone = lint.lint_documents(manifests.Reader().read_bytes(without.encode(), "t.yaml"), engine)
    assert ("nccl-timeout", "async-error-handling") in where(with_cm.findings)
    assert ("nccl-timeout", "async-error-handling") not in where(alone.findings)
    assert any("ConfigMap ml/nccl" in u for f in alone.findings for u in f.unresolved)


def test_configmap_in_another_file_resolves_too(engine: Engine, tmp_path: Path) -> None:
    configmap, workload = TRAIN.read_text().split("---\n", 1)
    (tmp_path / "a-workload.yaml").write_text(workload)
    (tmp_path / "b-configmap.yaml").write_text(configmap)
    report = lint.lint([str(tmp_path)], engine)
    assert ("nccl-timeout", "async-error-handling") in where(report.findings)


def test_stdin_is_linted_as_it_is_read_and_its_configmaps_resolve_wherever_they_sit(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stdin is read once and linted a batch at a time, as a file is: each document of a long stream is
    parsed once (all read first, the earlier ones were parsed again to locate their findings). A stream
    that mentions a ConfigMap is read for it first, so one after the workload, or in a file after stdin,
    still resolves its env."""
    configmap, workload = TRAIN.read_text().split("---\n", 1)
    copies = lint.BATCH_DOCUMENTS + 7
    stream = "---\n".join(workload.replace("name: llm", f"name: llm-{i}") for i in range(copies))
    parsed = _parses(monkeypatch)
    report = lint.lint(["-"], engine, io.BytesIO(stream.encode()))
    monkeypatch.undo()
    assert len(parsed) == copies and len({f.document for f in report.findings}) == copies
    after = lint.lint(["-"], engine, io.BytesIO(f"{workload}---\n{configmap}".encode()))
    assert ("nccl-timeout", "async-error-handling") in where(after.findings)
    before = lint.lint(["-"], engine, io.BytesIO(TRAIN.read_bytes()))
    assert where(after.findings).keys() == where(before.findings).keys()  # the same rules fail, either way


def test_summary_counts(engine: Engine) -> None:
    report = lint.lint([str(TRAIN)], engine)
    summary = report.summary.to_json()
    assert (summary["objects"], summary["notApplicable"], summary["invalid"]) == (1, 1, 0)
    assert summary["results"]["fail"] == 6
    assert summary["failuresBySeverity"]["high"] == 1  # the slow transport keeps its fixed severity
    assert summary["failuresBySeverity"]["low"] == 5  # a 16-GPU job: each fix is worth < 50 GPU-h/month


# (case, file content, error rule, line)
BAD_INPUTS: list[tuple[str, bytes, str, int]] = [
    (
        "alias bomb",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: &a [x, x, x, x, x, x, x, x, x]\n"
        + b"".join(
            f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode()
            for i in range(8)
        ),
        "alias-limit",
        0,
    ),
    (
        "duplicate keys",
        b"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a\n  name: b\n",
        "duplicate-key",
        5,
    ),
    (
        "1,000-level nesting",
        b"apiVersion: v1\nkind: Pod\nspec: " + b"[" * 1000 + b"]" * 1000 + b"\n",
        "too-deep",
        3,
    ),
    (
        "unrendered Helm template",
        b"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}\n",
        "unrendered-template",
        4,
    ),
    ("binary junk", b"\x7fELF\x02\x01\x01\x00\x00garbage", "binary", 1),
    ("not UTF-8", b"apiVersion: v1\nkind: Pod\nmetadata: {name: caf\xe9}\n", "binary", 3),
    ("YAML syntax", b"apiVersion: v1\nkind: Pod\nmetadata: {name: [x}\n", "yaml-syntax", 3),
    ("a list at the top", b"- a\n- b\n", "not-an-object", 1),
    # CPython refuses integer text past 4,300 digits; the document is reported, not the run aborted.
    (
        "100,000-digit integer",
        b"apiVersion: v1\nkind: Pod\nspec: {a: " + b"9" * 100_000 + b"}\n",
        "number-range",
        3,
    ),
]


@pytest.mark.parametrize(("case", "content", "rule", "line"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_beside_a_valid_manifest(
    engine: Engine, tmp_path: Path, case: str, content: bytes, rule: str, line: int
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(content)
    (tmp_path / "empty.yaml").write_bytes(b"")
    report = lint.lint([str(bad), str(tmp_path / "empty.yaml"), str(TRAIN)], engine)
    invalid = [f for f in report.findings if f.policy == "invalid-manifest"]
    assert [(f.rule, f.result, f.severity, f.file) for f in invalid] == [
        (rule, Result.ERROR, Severity.HIGH, str(bad))
    ]
    if line:
        assert invalid[0].line == line
    assert invalid[0].message
    assert invalid[0].remediation
    checked = [f for f in report.findings if f.file == str(TRAIN)]
    assert len(checked) == 6  # the valid manifest is still checked in full
    assert report.summary.objects == 1
    assert report.summary.invalid == 1
    assert lint.exit_code(report, Severity.HIGH) == 2
    assert lint.exit_code(report, Severity.CRITICAL) == 2  # unreadable input wins over --fail-on


def test_empty_documents_are_skipped_not_invalid(engine: Engine) -> None:
    data = b"---\n---\n# only a comment\n---\nnull\n...\n"
    report = lint.lint_documents(manifests.Reader().read_bytes(data, "e.yaml"), engine)
    assert report.findings == []
    assert (report.summary.objects, report.summary.invalid, report.unreadable) == (0, 0, 0)
    assert lint.exit_code(report, Severity.INFO) == 0


def test_stdin(engine: Engine) -> None:
    report = lint.lint(["-"], engine, io.BytesIO(TRAIN.read_bytes()))
    assert {f.file for f in report.findings} == {"<stdin>"}
    assert len(report.findings) == 6


def test_missing_path_is_a_usage_error(engine: Engine, tmp_path: Path) -> None:
    from kubegap.errors import UsageError

    with pytest.raises(UsageError, match="no such file"):
        lint.lint([str(tmp_path / "nope.yaml")], engine)


@pytest.mark.parametrize(
    ("results", "fail_on", "code"),
    [
        ([], Severity.HIGH, 0),
        ([(Result.FAIL, Severity.MEDIUM)], Severity.HIGH, 0),
        ([(Result.FAIL, Severity.MEDIUM)], Severity.MEDIUM, 1),
        ([(Result.FAIL, Severity.HIGH)], Severity.HIGH, 1),
        ([(Result.FAIL, Severity.CRITICAL)], Severity.HIGH, 1),
        ([(Result.ERROR, Severity.HIGH)], Severity.HIGH, 1),  # an error never passes
        ([(Result.SKIP, Severity.CRITICAL)], Severity.INFO, 0),  # an exemption never fails the run
        ([(Result.FAIL, Severity.INFO)], Severity.INFO, 1),
        ([(Result.FAIL, Severity.LOW)], Severity.CRITICAL, 0),
        ([(Result.FAIL, Severity.LOW), (Result.FAIL, Severity.HIGH)], Severity.HIGH, 1),
        ([(Result.FAIL, Severity.HIGH), (Result.FAIL, Severity.LOW)], Severity.HIGH, 1),
        ([(Result.FAIL, Severity.LOW), (Result.SKIP, Severity.CRITICAL)], Severity.MEDIUM, 0),
    ],
)
def test_exit_code(results: list[tuple[Result, Severity]], fail_on: Severity, code: int) -> None:
    from kubegap.findings import ObjectRef

    ref = ObjectRef("v1", "Pod", None, "p")
    report = lint.LintReport(findings=[Finding("p", "r", s, r, "m", "f", ref) for r, s in results])
    assert lint.exit_code(report, fail_on) == code
    # the same findings sent as text only (lint.Output.findings), in one run or split over two
    texts_only = lint.LintReport(unlisted_worst=worst(report.findings))
    assert lint.exit_code(texts_only, fail_on) == code
    for first in (
        lint.LintReport(findings=report.findings[:1]),
        lint.LintReport(unlisted_worst=worst(report.findings[:1])),
    ):
        first.add(lint.LintReport(unlisted_worst=worst(report.findings[1:])))
        assert lint.exit_code(first, fail_on) == code


def test_parallel_lint_matches_serial(engine: Engine, tmp_path: Path) -> None:
    text = TRAIN.read_text()
    for index in range(forked.PARALLEL_MIN_FILES):
        (tmp_path / f"f{index:03}.yaml").write_text(text.replace("name: llm", f"name: llm-{index}"))
    serial = lint.lint([str(tmp_path)], engine, jobs=1)
    parallel = lint.lint([str(tmp_path)], engine, jobs=2)
    assert parallel.summary.to_json() == serial.summary.to_json()
    assert serial.summary.objects == forked.PARALLEL_MIN_FILES
    # in the same order, equal field by field (cost-model inputs included) after the trip from the workers
    # (kubegap.blobs): the report does not depend on how many cores the machine has
    assert any(f.impact is not None for f in serial.findings)
    assert parallel.findings == serial.findings
    assert parallel.workloads == serial.workloads and len(serial.workloads) > 1


def test_json_texts_made_by_the_workers_are_those_of_one_process(engine: Engine, tmp_path: Path) -> None:
    """The JSON report's texts are made where the findings are; runs of files without a finding (the
    first 24, Services) add nothing, not an empty item."""
    text = TRAIN.read_text()
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n"
    for index in range(forked.PARALLEL_MIN_FILES + 24):
        body = service if index < 24 else text.replace("name: llm", f"name: llm-{index}")
        (tmp_path / f"f{index:03}.yaml").write_text(body)
    texts = lint.Output(texts=True)
    serial = lint.lint([str(tmp_path)], engine, jobs=1, output=texts)
    parallel = lint.lint([str(tmp_path)], engine, jobs=2, output=texts)
    assert serial.findings and serial.findings[0].file and serial.findings[0].file.endswith("f024.yaml")
    assert serial.findings_json is not None and parallel.findings_json is not None
    assert len(parallel.findings_json) > 1  # one piece per run that found something
    expected = ", ".join(map(finding_text, serial.findings))
    assert "".join(serial.findings_json) == expected == "".join(parallel.findings_json)
    assert lint.lint([str(tmp_path)], engine, jobs=2).findings_json is None  # made only when asked
    # where no format reads the findings themselves, the runs send their texts alone, and what decides
    # the exit code: the same texts, the same summary, the same code at every threshold
    alone = lint.lint([str(tmp_path)], engine, jobs=2, output=lint.Output(texts=True, findings=False))
    assert alone.findings == [] and alone.findings_json == parallel.findings_json
    assert alone.summary.to_json() == serial.summary.to_json() and alone.workloads == []
    assert alone.workloads_json == [(w.lost, workload_text(w)) for w in serial.workloads]
    assert alone.unlisted_worst is not None
    assert [lint.exit_code(alone, s) for s in Severity] == [lint.exit_code(serial, s) for s in Severity]
    assert {lint.exit_code(serial, s) for s in Severity} == {0, 1}  # both codes are reached


@pytest.mark.parametrize(("value", "jobs"), [("1", 1), ("3", 3)])
def test_jobs_from(value: str, jobs: int) -> None:
    assert lint.jobs_from(value) == jobs


@pytest.mark.parametrize("value", ["0", "-1", "many", "1.5"])
def test_jobs_from_rejects(value: str) -> None:
    from kubegap.errors import UsageError

    with pytest.raises(UsageError):
        lint.jobs_from(value)


def test_dangling_symlink_in_a_folder_is_an_unreadable_document(engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "a-dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (tmp_path / "b-train.yaml").write_bytes(TRAIN.read_bytes())
    report = lint.lint([str(tmp_path)], engine)
    invalid = [(Path(f.file or "").name, f.rule) for f in report.findings if f.policy == "invalid-manifest"]
    assert invalid == [("a-dangling.yaml", "unreadable")]
    assert len([f for f in report.findings if f.file and f.file.endswith("b-train.yaml")]) == 6
    assert lint.exit_code(report, Severity.HIGH) == 2


def test_an_object_past_its_deadline_is_an_error_finding_and_the_rest_is_linted(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = TRAIN.read_bytes() + b"\n---\n" + TRAIN.read_bytes()
    monkeypatch.setattr(lint, "EVALUATION_TIMEOUT", -1.0)  # every deadline has already passed
    report = lint.lint_documents(manifests.Reader().read_bytes(stream, "two.yaml"), engine)
    assert [(f.policy, f.rule, f.result, f.document) for f in report.findings] == [
        (NOT_EVALUATED, "deadline", Result.ERROR, 1),  # the ConfigMap of each copy is not judged
        (NOT_EVALUATED, "deadline", Result.ERROR, 3),
    ]
    assert "not a pass" in report.findings[0].message
    assert report.summary.objects == 2
    assert lint.exit_code(report, Severity.HIGH) == 1


def test_the_json_report_is_the_same_whether_or_not_another_format_reads_the_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `--format json` alone, each run sends the texts of its findings and workloads, not the records
    (lint.Output.findings); beside SARIF it sends the records. The report and the exit code are the same,
    with one job or two, and the workloads come costliest first."""
    from kubegap.cli import main

    text = TRAIN.read_text()
    for index in range(forked.PARALLEL_MIN_FILES):  # workloads of 2 to 9 replicas: their losses differ
        body = text.replace("name: llm", f"name: llm-{index}").replace(
            "replicas: 2", f"replicas: {2 + index % 8}"
        )
        (tmp_path / f"f{index:03}.yaml").write_text(body)
    seen = set()
    for jobs in ("1", "2"):
        for extra in ([], ["--output", f"sarif={tmp_path / 'out.sarif'}"]):
            code = main(["lint", "--format", "json", "--jobs", jobs, str(tmp_path), *extra])
            seen.add((code, capsys.readouterr().out))
    assert len(seen) == 1
    ((code, out),) = seen
    report = json.loads(out)
    assert code == 1 and len(report["findings"]) > forked.PARALLEL_MIN_FILES
    lost = [w["lostGpuHoursPerMonth"] for w in report["workloads"]]
    assert (
        len(lost) == forked.PARALLEL_MIN_FILES and len(set(lost)) > 1 and lost == sorted(lost, reverse=True)
    )
