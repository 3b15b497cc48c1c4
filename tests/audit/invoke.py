"""`kubegap audit` called in process, as the command line calls it: (exit code, stdout, stderr)."""

from __future__ import annotations

import argparse

import pytest

from kubegap.audit import command


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    code = command.run(parser.parse_args(list(argv)))
    out, err = capsys.readouterr()
    return code, out, err
