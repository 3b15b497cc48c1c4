"""Property-based tests: generated hostile input for the reader, the engine, argv, durations and the webhook.

Bounded in examples (no time limits: machines are noisy) so the suite stays fast; `benchmarks/fuzz.py` runs
the same properties with many more examples on demand.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from kubegap.config import Settings
from kubegap.facts import shell
from kubegap.webhook import create_app
from kubegap.webhook.app import WebhookApp
from tests.support import fuzzing
from tests.webhook.asgi import call

# cel-python raises the interpreter's recursion limit while it evaluates; hypothesis notes it, harmlessly.
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
BOUNDED = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@BOUNDED
@given(fuzzing.manifest_inputs())
def test_the_reader_turns_any_bytes_into_documents_or_findings(data: bytes) -> None:
    fuzzing.check_manifest(data, fuzzing.engine())


@pytest.mark.parametrize("backend", ["cel-expr", "cel-python"])
def test_type_confused_side_fields_never_hide_a_failing_gpu_job(backend: str) -> None:
    @BOUNDED
    @given(fuzzing.confused_jobs(fuzzing.SIDE_FIELDS))
    def run(job: dict[str, Any]) -> None:
        fuzzing.check_confused(job, fuzzing.engine(backend), must_fail=True)

    run()


@BOUNDED
@given(fuzzing.confused_jobs(fuzzing.SIDE_FIELDS + fuzzing.CORE_FIELDS))
def test_type_confused_core_fields_never_crash_the_engine(job: dict[str, Any]) -> None:
    fuzzing.check_confused(job, fuzzing.engine(), must_fail=False)


@settings(max_examples=500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(fuzzing.confused_examples())
def test_any_value_of_any_example_retyped_never_crashes_the_engine(obj: dict[str, Any]) -> None:
    """Compiled modules check declared types at run time (setup.py): a type that input can break is a
    crash there, where pure Python may go on."""
    fuzzing.check_retyped(obj, fuzzing.engine())


@BOUNDED
@given(fuzzing.shell_lines())
def test_shell_words_agree_with_shlex(line: str) -> None:
    fuzzing.check_shell_line(line)


@given(fuzzing.plain_scripts())
def test_a_plain_script_is_split_into_the_words_the_scanner_reads(script: str) -> None:
    assert shell.words(script) == shell.scanned(script)


@BOUNDED
@given(fuzzing.CONTAINERS)
def test_any_command_and_args_tokenize(container: dict[str, Any]) -> None:
    fuzzing.check_tokenize(container)


@settings(max_examples=300, deadline=None, database=None)
@given(fuzzing.DURATION_TEXT)
def test_durations_read_what_go_reads(text: str) -> None:
    fuzzing.check_duration(text)


@pytest.mark.parametrize(
    "text", ["1\u00b5s", "1\u03bcs", "1.5h30m", ".5s", "1.s", "0", "-0h", "+0.0s", "-1s"]
)
def test_go_spellings_the_properties_found(text: str) -> None:
    fuzzing.check_duration(text)


@pytest.fixture(scope="module")
def app() -> WebhookApp:
    return create_app(Settings())


def test_generated_admission_reviews_get_a_4xx_or_an_answer_for_their_uid(app: WebhookApp) -> None:
    @BOUNDED
    @given(fuzzing.review_bodies())
    def run(body: bytes) -> None:
        reply = call(app, "POST", "/validate", body, {"Content-Type": "application/json"})
        fuzzing.check_review(reply.status, reply.body, body)

    run()


def test_the_on_demand_fuzzer_runs_every_property() -> None:
    """`benchmarks/fuzz.py` builds its own checks; a few examples each keep it from rotting unseen."""
    from benchmarks import fuzz

    for name, (strategy, make) in fuzz.PROPERTIES.items():
        assert fuzz.run(name, strategy, make(), examples=3), name
