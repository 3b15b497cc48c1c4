"""`--chart-dir DIR`: `# Source:` names of `helm template` output mapped back to repository paths.

Helm names each rendered document by chart name (`trainer/templates/job.yaml`, also
`trainer/charts/sub/templates/x.yaml` for a subchart), not by where the chart sits in the repository
(`deploy/charts/trainer/`). Given the chart folders, findings point at the template files, so CI
annotations land on the right file. Line numbers stay those of the rendered stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from kubegap.errors import UsageError
from kubegap.findings import Finding


@dataclass(frozen=True, slots=True)
class ChartDirs:
    """The chart folders given with `--chart-dir`, by the name in their Chart.yaml."""

    folders: tuple[tuple[str, str], ...] = ()  # (chart name from Chart.yaml, folder)

    def rename(self, name: str) -> str:
        """The repository path of a `# Source:` name; other names (real files, stdin) are kept."""
        if Path(name).exists():
            return name
        for chart, folder in self.folders:
            if name.startswith(f"{chart}/"):
                return (Path(folder) / name[len(chart) + 1 :]).as_posix()
        return name

    def apply(self, findings: Iterable[Finding]) -> list[Finding]:
        if not self.folders:  # nothing to map: no file is looked up, no finding copied
            return list(findings)
        renamed: dict[str, str] = {}  # a file holds many findings: look each name up once
        out = []
        for f in findings:
            if f.file and f.file not in renamed:
                renamed[f.file] = self.rename(f.file)
            out.append(replace(f, file=renamed[f.file]) if f.file and renamed[f.file] != f.file else f)
        return out


def chart_dirs(folders: Sequence[str]) -> ChartDirs:
    pairs = []
    for folder in folders:
        chart = Path(folder) / "Chart.yaml"
        try:
            name = yaml.safe_load(chart.read_text("utf-8")).get("name")
        except (OSError, yaml.YAMLError, AttributeError) as err:
            raise UsageError(f"--chart-dir {folder}: cannot read {chart}: {err}") from None
        if not isinstance(name, str) or not name:
            raise UsageError(f"--chart-dir {folder}: {chart} has no name")
        pairs.append((name, folder.rstrip("/") or "."))
    return ChartDirs(tuple(pairs))
