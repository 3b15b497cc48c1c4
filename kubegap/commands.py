"""Small commands: `kubegap version` (with whether it runs compiled, and the policy set's digest) and
`kubegap completion SHELL`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from kubegap import __version__, completion


def _version_arguments(parser: argparse.ArgumentParser) -> None:
    from kubegap.options import add_engine_arguments

    add_engine_arguments(parser, fail_on=False)


def _version(args: argparse.Namespace) -> int:
    from kubegap import native, policyset
    from kubegap.evaluate import build_engine
    from kubegap.options import settings_from_args

    settings = settings_from_args(args)
    engine = build_engine(settings)  # the same checks as a run: a broken policy set is an error here too
    ids = ", ".join(p.id for p in engine.policies)
    digest = policyset.of_settings(settings)
    print(f"kubegap {__version__}, {native.state().describe()}")
    print(f"policy set {digest} ({len(engine.policies)} policies: {ids})")
    return 0


def _completion_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=completion.SHELLS, help="the shell to complete in")


def _completion(args: argparse.Namespace) -> int:
    from kubegap import cli

    sys.stdout.write(completion.script(args.shell, completion.commands(lambda name: cli._parser([name]))))
    return 0


Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
VERSION: Command = (_version_arguments, _version)
COMPLETION: Command = (_completion_arguments, _completion)
