"""`kubegap lint`: manifests in, findings with file:line:col out.

ConfigMaps in the same input are read first, so `configMapKeyRef` and `envFrom` resolve as they would in
the cluster. Positions are computed only for documents that have findings.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from yaml.nodes import Node

from kubegap import fieldpath, forked, inputs, jsontext, manifests, yamlguard
from kubegap.blobs import Blobs
from kubegap.charts import ChartDirs
from kubegap.enginerules import DEADLINE, INVALID_MANIFEST, NOT_EVALUATED
from kubegap.errors import UsageError
from kubegap.evaluate import Context, DeadlineExceeded, Engine, Evaluation
from kubegap.facts.env import ConfigMaps
from kubegap.findings import (
    Check,
    Finding,
    ObjectRef,
    Result,
    Severity,
    Summary,
    WorkloadCost,
    error,
    highest,
    worst,
)
from kubegap.manifests import configmaps_of
from kubegap.records import changed
from kubegap.reports.json import finding_text, workload_text

if TYPE_CHECKING:  # kubegap.fix reads lint: imported where a run makes fixes
    from kubegap.fix.suggestions import Suggested

# Per object, as the audit allows: an object whose evaluation runs away is reported, the run goes on.
EVALUATION_TIMEOUT = 10.0


@dataclass(slots=True)
class LintReport:
    """What a lint found, gathered run by run."""

    findings: list[Finding] = field(default_factory=list)  # fail, error and skip results, located
    passes: list[Finding] = field(default_factory=list)  # for formats that count passes (JUnit, SARIF)
    summary: Summary = field(default_factory=Summary)
    unreadable: int = 0  # documents reported as invalid-manifest
    workloads: list[WorkloadCost] = field(default_factory=list)  # training workloads, with their cost
    # The findings' JSON texts, in pieces, as kubegap.reports.report.Report takes them; made only for the
    # JSON report, where the findings are made: by the worker processes, not after them in this one.
    findings_json: list[str] | None = None
    # The highest severity among failing or errored findings a run sent only as text (Output.findings)
    unlisted_worst: Severity | None = None
    # (loss, JSON text) of each workload a run sent only as text (Output.findings), in the runs' order
    workloads_json: list[tuple[float, str]] | None = None
    # (fixed, left as TODO): what `kubegap fix` would settle in the files, where counted (Output.fixable)
    fixable: tuple[int, int] | None = None
    # each finding's suggested fix, by what identifies it (Output.suggest; kubegap.fix.suggestions)
    suggested: list[Suggested] | None = None

    def add(self, part: LintReport) -> None:
        """A run's report after the runs before it."""
        self.findings += part.findings
        self.passes += part.passes
        self.summary.merge(part.summary)
        self.unreadable += part.unreadable
        self.workloads += part.workloads
        self.unlisted_worst = highest([self.unlisted_worst, part.unlisted_worst])
        if part.fixable is not None:
            done, todo = self.fixable or (0, 0)
            self.fixable = done + part.fixable[0], todo + part.fixable[1]
        if part.suggested is not None:
            if self.suggested is None:
                self.suggested = []
            self.suggested += part.suggested
        if part.workloads_json is not None:
            if self.workloads_json is None:
                self.workloads_json = []
            self.workloads_json += part.workloads_json
        if part.findings_json is not None:
            pieces = [p for p in part.findings_json if p]
            if self.findings_json is None:
                self.findings_json = []
            elif self.findings_json and pieces:
                pieces[0] = ", " + pieces[0]
            self.findings_json += pieces


def _invalid(doc: manifests.Document) -> Finding:
    assert doc.error is not None
    problem = doc.error
    fix = (
        "Fix the document so that it parses as a Kubernetes object; "
        "the other documents of the file were still checked."
    )
    return error(
        Check(INVALID_MANIFEST, problem.rule, Severity.HIGH, fix),
        ObjectRef("", "", None, ""),  # an unreadable document names no object
        problem.message,
        file=doc.file,
        document=doc.index,
        line=problem.line if problem.line is not None else doc.line,
        column=problem.column,
    )


def _late(obj: Mapping[str, Any], reason: str) -> Finding:
    fix = "Look for a policy whose CEL walks long lists of this object (see docs/reliability.md)."
    message = f"{reason} ({EVALUATION_TIMEOUT:g} s); its findings are unknown, so it is not a pass"
    return error(Check(NOT_EVALUATED, DEADLINE, Severity.HIGH, fix), ObjectRef.of(obj), message)


def _located(doc: manifests.Document, finding: Finding) -> Finding:
    return finding.located(doc.file, doc.index, doc.line, 1)


def locate_finding(
    doc: manifests.Document,
    finding: Finding,
    root: Node | None = None,
    places: dict[str, tuple[int, int]] | None = None,
) -> Finding:
    """The finding with its file, document, line and column (`kubegap fix` reports the same places);
    `root`: the graph of the document's text, where the caller holds it (manifests.locate); `places`:
    the places of the document's paths found so far (a document's findings share 43% of their paths in
    the lint corpus: a container and its arguments are named by several rules)."""
    line, column = doc.line, 1
    path = finding.path
    if path is not None:
        found = places.get(path) if places is not None else None
        if found is None:
            found = line, column
            with contextlib.suppress(ValueError):  # a path a custom policy built by hand: the document
                found = manifests.locate(doc, fieldpath.parse(path), root)
            if places is not None:
                places[path] = found
        line, column = found
    return finding.located(doc.file, doc.index, line, column)


def lint_documents(
    documents: Iterable[manifests.Document],
    engine: Engine,
    keep_passes: bool = False,
    known: ConfigMaps | None = None,
) -> LintReport:
    """Evaluate documents as they come, a batch at a time (memory stays flat on long streams); `known`
    ConfigMaps resolve env.

    Without `known`, the documents are read in full first for their ConfigMaps.
    """
    if known is None:
        documents = list(documents)
        known = configmaps_of(documents)
    report = LintReport()
    context = Context(configmaps=known)
    for batch in _batches(documents):
        judged = [(doc, root, _evaluate(doc, engine, context)) for doc, root in batch]
        for doc, root, evaluation in judged:
            _report(report, doc, root, evaluation, keep_passes)
        del batch, judged  # freed before the next batch is read, which reuses their memory
    return report


# Documents per batch (`_batches`): 32 to 128 did alike, 8 and 256 worse (docs/speed.md).
BATCH_DOCUMENTS = 64
BATCH_TEXT = 1024 * 1024  # of text: about 25 MiB of graphs


def _batches(
    documents: Iterable[manifests.Document],
) -> Iterator[list[tuple[manifests.Document, Node | None]]]:
    """The documents, each with its graph, in batches that each step takes whole: reading them,
    evaluating them, locating their findings. One document taken through every step in turn ran each
    step's code and data out of the core's caches, and the next step's back in: batched, lint of the
    2,000 corpus takes about a tenth less CPU (docs/speed.md). The batch holds its documents' graphs,
    which the reader has just made (kubegap.yamlguard keeps only the last few), and is bounded so that
    memory stays flat."""
    batch: list[tuple[manifests.Document, Node | None]] = []
    text, size = "", 0
    for doc in documents:
        # the graph the reader has just made of it (where the documents were all read first, the
        # earlier ones' are composed again if their findings are located)
        root = yamlguard.kept(doc.text) if doc.obj is not None else None
        if root is not None and doc.text is not text:  # a List's items share their text and graph
            text, size = doc.text, size + len(doc.text)
        batch.append((doc, root))
        if len(batch) >= BATCH_DOCUMENTS or size >= BATCH_TEXT:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _evaluate(doc: manifests.Document, engine: Engine, context: Context) -> Evaluation | str | None:
    """The document's evaluation; the reason where it ran past its deadline; None for an unreadable one."""
    if doc.obj is None:
        return None
    try:
        return engine.evaluate(doc.obj, context, time.monotonic() + EVALUATION_TIMEOUT)
    except DeadlineExceeded as exc:
        return str(exc)


def _report(
    report: LintReport,
    doc: manifests.Document,
    root: Node | None,
    evaluation: Evaluation | str | None,
    passes: bool,
) -> None:
    """One document's part of the report, its findings located in `root`, its graph."""
    if evaluation is None:
        assert doc.error is not None
        report.unreadable += 1
        report.summary.invalid += 1
        report.findings.append(_invalid(doc))
        return
    if isinstance(evaluation, str):
        assert doc.obj is not None
        report.summary.objects += 1
        late = _located(doc, _late(doc.obj, evaluation))
        report.summary.add([late])
        report.findings.append(late)
        return
    if not evaluation.supported:
        report.summary.not_applicable += 1
        return
    report.summary.objects += 1
    report.summary.add(evaluation.results)
    places: dict[str, tuple[int, int]] = {}
    report.findings.extend(locate_finding(doc, f, root, places) for f in evaluation.findings)
    if evaluation.cost is not None:
        report.workloads.append(changed(evaluation.cost, file=doc.file, document=doc.index))
    if passes:
        report.passes += [
            f.located(doc.file, doc.index, None, None) for f in evaluation.results if f.result is Result.PASS
        ]


@dataclass(frozen=True, slots=True)
class Output:
    """What becomes of the findings once linted: the chart folders their files are named by, whether
    passes are kept (SARIF, JUnit and PolicyReport count them), whether their JSON texts are made."""

    charts: ChartDirs = field(default_factory=ChartDirs)
    keep_passes: bool = False
    texts: bool = False
    # Whether a format reads the findings themselves. Where none does (`--format json` alone), a run
    # sends back their texts only: reading 10,000 findings back cost the one process that gathers the
    # runs 0.2 s of CPU, taken from the two cores its workers were busy on.
    findings: bool = True
    # Whether the runs count what `kubegap fix` would settle (the text report's line), and make each
    # finding's suggested fix (SARIF), each file while its documents are at hand (kubegap.fix.reports).
    fixable: bool = False
    suggest: bool = False


def lint(
    paths: Sequence[str],
    engine: Engine,
    stdin: IO[bytes] | None = None,
    jobs: int = 1,
    output: Output = Output(),
) -> LintReport:
    """Lint files, folders and `-`; with jobs > 1 and enough files, in worker processes sharing the engine."""
    return lint_files(inputs.expand(paths), engine, stdin, jobs, output)


def lint_files(
    expanded: Sequence[tuple[str, str | None]],
    engine: Engine,
    stdin: IO[bytes] | None = None,
    jobs: int = 1,
    output: Output = Output(),
) -> LintReport:
    """Lint the files `inputs.expand` listed (the command line lists them once): each run reads its share."""
    files = [path for _, path in expanded]
    data = None
    if None in files:  # stdin can be read only once: read here, then linted from memory
        data = (stdin if stdin is not None else sys.stdin.buffer).read(manifests.MAX_FILE_BYTES + 1)
    known = _configmaps(expanded, data)
    if data is not None:
        return _lint_files(expanded, engine, io.BytesIO(data), output, known)
    if not forked.parallel(len(files), jobs):
        return _lint_files(expanded, engine, None, output, known)
    if output.fixable or output.suggest:  # imported once, before the workers are forked
        import kubegap.fix.reports  # noqa: F401

    def lint_run(run: Sequence[int]) -> bytes:
        """A run's report, pickled as kubegap.blobs does: read back here, in the one process that writes
        the report, where pickle's own way with dataclasses cost 0.35 s for 10,000 findings."""
        return Blobs().dumps(_lint_files([expanded[i] for i in run], engine, None, output, known))

    report = LintReport()
    for data in forked.each_run(lint_run, len(expanded), jobs):
        report.add(pickle.loads(data))
    return report


def _configmaps(expanded: Sequence[tuple[str, str | None]], stdin: bytes | None) -> ConfigMaps:
    """The ConfigMaps of the inputs in their order, from the few that mention one, before any is linted:
    one may sit in any file. Stdin that mentions one is so read twice, and is then linted as it is read,
    as a file is, instead of every document of it held until the last was read."""
    reader = manifests.Reader()

    def mentioning() -> Iterator[manifests.Document]:
        for name, path in expanded:
            if path is None:
                if stdin is not None and b"ConfigMap" in stdin:
                    yield from reader.read_bytes(stdin, name)
            elif _mentions_configmap(path):
                yield from reader.read_files([(name, path)])

    return configmaps_of(mentioning())


def _mentions_configmap(path: str) -> bool:
    """A cheap pre-read; a file that cannot be read is reported by the Reader, not here."""
    try:
        return b"ConfigMap" in manifests.read_file(path)
    except OSError:
        return False


def _lint_files(
    files: Sequence[tuple[str, str | None]],
    engine: Engine,
    stdin: IO[bytes] | None,
    output: Output,
    known: ConfigMaps,
) -> LintReport:
    reader = manifests.Reader()
    if output.fixable or output.suggest:
        report = _lint_with_fixes(files, engine, reader, stdin, output, known)
    else:
        report = lint_documents(reader.read_files(files, stdin), engine, output.keep_passes, known)
    report.summary.not_applicable += reader.skipped
    report.findings = output.charts.apply(report.findings)
    report.passes = output.charts.apply(report.passes)
    if output.texts:  # 0.2 s of 10,000 findings' 0.28 s report, where it ran after the workers
        report.findings_json = jsontext.joined(map(finding_text, report.findings))
        if not output.findings:  # nor the workloads: the JSON report lists them costliest first
            report.unlisted_worst, report.findings = worst(report.findings), []
            report.workloads_json = [(w.lost, workload_text(w)) for w in report.workloads]
            report.workloads = []
    return report


def _lint_with_fixes(
    files: Sequence[tuple[str, str | None]],
    engine: Engine,
    reader: manifests.Reader,
    stdin: IO[bytes] | None,
    output: Output,
    known: ConfigMaps,
) -> LintReport:
    """`lint_documents` file by file, with what `kubegap fix` would do in each (`fixable`, `suggested`)
    from the documents just read and the findings just made. Stdin is linted, not fixed."""
    from kubegap.fix.checked import Scope
    from kubegap.fix.reports import of_file

    each = ((name, path, list(reader.read_files([(name, path)], stdin))) for name, path in files)
    scope = Scope(engine, known, lambda finding: True)
    report = LintReport(fixable=(0, 0) if output.fixable else None, suggested=[] if output.suggest else None)
    for name, path, documents in each:
        part = lint_documents(documents, engine, output.keep_passes, known)
        if path is not None:
            part.fixable, part.suggested = of_file(
                name, path, documents, part.findings, scope, output.fixable, output.suggest
            )
        report.add(part)
    return report


def jobs_from(value: str | None) -> int:
    """`--jobs auto` (or KUBEGAP_JOBS): one worker per core, at most 8."""
    text = value or os.environ.get("KUBEGAP_JOBS") or "auto"
    if text == "auto":
        return min(os.cpu_count() or 1, 8)
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--jobs takes a positive number or auto, not {text!r}")
    return int(text)


def exit_code(report: LintReport, fail_on: Severity) -> int:
    """2 when input could not be read (after reporting everything else), 1 for findings >= fail_on."""
    if report.unreadable:
        return 2
    found = highest([worst(report.findings), report.unlisted_worst])
    return 1 if found is not None and found >= fail_on else 0
