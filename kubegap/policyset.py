"""The version of a policy set: a digest of its policy files and knob catalogues, so two runs can tell
whether they judged by the same rules (`kubegap version`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubegap.config import Settings


def bundled_root() -> Path:
    return Path(str(files("kubegap.policies")))


def rule_files(policy_dirs: Iterable[str] = (), knob_files: Iterable[str] = ()) -> list[Path]:
    """The files whose content decides a run's verdicts (examples and docs left out)."""
    found = [*sorted(bundled_root().glob("*/policy.yaml")), bundled_root() / "knobs.yaml"]
    for folder in policy_dirs:
        found += sorted(Path(folder).glob("*/policy.yaml")) + sorted(Path(folder).glob("*.yaml"))
    return found + [Path(f) for f in knob_files]


def digest(paths: Iterable[Path], params: Mapping[str, Any] | None = None) -> str:
    """sha256 over each file's name within its folder, its bytes, and the parameters set on top of them
    (`--set`, `params:`), which change verdicts too; a short prefix is shown."""
    sha = hashlib.sha256(json.dumps(params or {}, sort_keys=True, default=str).encode())
    for path in paths:
        sha.update(f"{path.parent.name}/{path.name}\0".encode())
        sha.update(path.read_bytes())
        sha.update(b"\0")
    return sha.hexdigest()[:12]


def of_settings(settings: Settings) -> str:
    """The digest of the policy set a run with these settings judges by."""
    return digest(rule_files(settings.policy_dirs, settings.knob_files), settings.params)
