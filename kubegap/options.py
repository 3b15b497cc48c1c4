"""Command-line options shared by lint, audit, serve and test: which policies, which parameters."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace

from kubegap.cel import BACKENDS
from kubegap.config import Settings, load_config, parse_set
from kubegap.errors import UsageError
from kubegap.findings import Severity

SEVERITIES = [s.value for s in Severity]
DISCOVERING = ("lint", "audit", "policies", "test", "version")


def add_engine_arguments(parser: argparse.ArgumentParser, fail_on: bool = True) -> None:
    """The rule options; `fail_on=False` for commands whose exit code does not depend on findings."""
    group = parser.add_argument_group("rules")
    group.add_argument("--config", metavar="FILE", help="settings file (policies, params, webhook, audit)")
    group.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="ID",
        help="run only this policy, or POLICY/RULE only this rule (repeatable)",
    )
    group.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="ID",
        help="never run this policy, or POLICY/RULE this rule (repeatable)",
    )
    group.add_argument(
        "--policies",
        action="append",
        default=[],
        metavar="DIR",
        help="extra policy folder; a policy with a bundled id replaces it (repeatable)",
    )
    group.add_argument(
        "--knobs",
        action="append",
        default=[],
        metavar="FILE",
        help="extra knob catalogue, e.g. your launcher's flags (repeatable)",
    )
    group.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="POLICY.PARAM=VALUE",
        dest="set_params",
        help="override a parameter, e.g. nccl-timeout.maxCollectiveTimeout=20m, or a cost-model input, "
        "e.g. impact.failuresPerGpuHour=3e-5 (repeatable)",
    )
    if fail_on:
        _add_fail_on(group)
    group.add_argument(
        "--cel-backend",
        choices=("auto", *BACKENDS),
        help="CEL runtime (default auto: cel-expr where installed; env KUBEGAP_CEL_BACKEND)",
    )


def _add_fail_on(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--fail-on",
        choices=SEVERITIES,
        metavar="SEVERITY",
        help=f"exit 1 when a finding is at least this severe (default: high; one of {', '.join(SEVERITIES)})",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The config file's settings with the command line on top."""
    # `.kubegap.yaml` is found without --config by the commands run in a repository (as CI runs them).
    settings = load_config(args.config, discovered=getattr(args, "command", None) in DISCOVERING)
    settings = replace(
        settings,
        policy_dirs=(*settings.policy_dirs, *args.policies),
        knob_files=(*settings.knob_files, *args.knobs),
        select=tuple(args.policy) or settings.select,
        skip=(*settings.skip, *args.skip),
        fail_on=Severity(args.fail_on) if getattr(args, "fail_on", None) else settings.fail_on,
        cel_backend=args.cel_backend or settings.cel_backend,
    )
    return settings.with_params(parse_set(args.set_params))


def parse_outputs(specs: Sequence[str], formats: Sequence[str]) -> list[tuple[str, str]]:
    """`--output FORMAT=PATH` values (lint and audit), checked before any work, so a typo fails at once."""
    outputs = []
    for spec in specs:
        fmt, equals, path = spec.partition("=")
        if not equals or fmt not in formats or not path:
            raise UsageError(f"--output {spec!r}: write FORMAT=PATH, FORMAT one of {', '.join(formats)}")
        outputs.append((fmt, path))
    return outputs


def add_exclude_argument(parser: argparse.ArgumentParser) -> None:
    """`--exclude GLOB`, read the same way by every command that walks folders (lint, fix)."""
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out files and folders whose path or name matches, e.g. 'vendor' or '*/generated/*' "
        "(repeatable; adds to exclude: in the config)",
    )
