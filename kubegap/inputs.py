"""Which files a lint reads: the paths given, folders walked, minus what is excluded.

A folder is walked recursively for `*.yaml`, `*.yml` and `*.json` files, sorted by their path components
for stable output. Hidden folders (`.git`) are left out, so are files and folders an `--exclude` glob
matches, and the `templates/` folder beside a `Chart.yaml`: Helm templates are linted once rendered. A file
named on the command line is read whatever its name.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from kubegap import globs
from kubegap.errors import UsageError

log = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"


def expand(
    paths: Sequence[str], exclude: Sequence[str] = (), notes: list[str] | None = None
) -> list[tuple[str, str | None]]:
    """(display name, path or None for stdin) of every file to read, in reading order.

    Folders are walked without the files and folders that `exclude` globs match, and without the
    unrendered `templates/` folder of a Helm chart (a note in `notes` says so).
    """
    files: list[tuple[str, str | None]] = []
    for given in paths:
        if given == STDIN:
            files.append((STDIN_NAME, None))
            continue
        try:  # one stat per path, without a `Path` (which took two thirds of it)
            mode = os.stat(given).st_mode  # noqa: PTH116
        except (OSError, ValueError) as err:
            if isinstance(err, OSError) and err.errno not in _MISSING:
                raise
            raise UsageError(f"{given}: no such file or directory") from None
        if stat.S_ISDIR(mode):
            files.extend((name, name) for name in _walk(Path(given), tuple(exclude), notes))
        else:
            files.append((given, given))
    return files


# what `Path.exists` takes for a path that is not there (a dangling link, a file taken for a folder)
_MISSING = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def excluded(path: Path, exclude: tuple[str, ...]) -> bool:
    """A glob matches the path as walked (`deploy/vendor/x.yaml`) or the file or folder name alone."""
    return bool(exclude) and (globs.matches(path.as_posix(), exclude) or globs.matches(path.name, exclude))


def _chart_templates(folder: Path, notes: list[str] | None) -> bool:
    """A chart's `templates/` holds Go templates, not manifests: they are linted once rendered."""
    if folder.name != "templates" or not (folder.parent / "Chart.yaml").is_file():
        return False
    if notes is not None:
        notes.append(
            f"skipped {folder}: Helm chart templates; lint them rendered: "
            f"helm template {folder.parent} | kubegap lint -"
        )
    return True


def _walk(root: Path, exclude: tuple[str, ...] = (), notes: list[str] | None = None) -> list[str]:
    """The manifest files under `root`, named as `Path` writes them (`corpus/a.yaml`, also for `./corpus`),
    in the order of their path components. Texts, not a `Path` per file: that was 20 ms of 2,000 files."""
    found: list[tuple[tuple[str, ...], str]] = []
    if _chart_templates(root, notes):
        return []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [
            s
            for s in subfolders
            if not s.startswith(".")
            and not excluded(Path(folder, s), exclude)
            and not _chart_templates(Path(folder, s), notes)
        ]
        here = Path(folder)
        parts = here.relative_to(root).parts
        base = str(here)
        prefix = "" if base == "." else base if base.endswith(os.sep) else base + os.sep
        found.extend(
            ((*parts, name), prefix + name)
            for name in names
            if name.lower().endswith(SUFFIXES) and not (exclude and excluded(Path(folder, name), exclude))
        )
    found.sort(key=lambda item: item[0])
    log.debug("%s: %d manifest files", root, len(found))
    return [name for _, name in found]
