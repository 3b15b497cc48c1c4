"""kubegap's own files (policies, knob catalogues, config): read safely and checked against a JSON Schema.

Errors name the file and the JSON pointer of every problem, so a typo is found without guessing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kubegap.errors import PolicyError

if TYPE_CHECKING:
    import jsonschema

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    import jsonschema  # here: a run that checks no file of its own (no config) starts 50 ms sooner

    schema = json.loads(files("kubegap").joinpath("schemas", f"{name}.schema.json").read_text("utf-8"))
    if name == "knobs":  # the setting names are declared once, in the facts contract
        from kubegap.facts.contract import setting_names

        schema["$defs"]["knob"]["properties"]["setting"]["enum"] = setting_names()
    # The schemas ship with kubegap: tests/test_schema.py checks them against their metaschema, which
    # here would cost 50-100 ms at every start (a third of building the engine).
    cls = jsonschema.validators.validator_for(schema)
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "/"


def check(document: Any, schema: str, source: str) -> Mapping[str, Any]:
    """Validate against a bundled schema; raise PolicyError listing every error with its JSON pointer."""
    errors = sorted(_validator(schema).iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"  {pointer(e.absolute_path)}: {e.message}" for e in errors[:20]]
        more = f"\n  … and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise PolicyError(f"{source}: not a valid {schema} file:\n" + "\n".join(lines) + more)
    assert isinstance(document, Mapping)  # every schema requires an object at the top
    return document


def load(path: str | Path, schema: str) -> Mapping[str, Any]:
    """Read one YAML (or JSON) file and check it; PolicyError on any problem."""
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PolicyError(f"{path}: cannot read: {err}") from err
    return parse(text, schema, str(path))


def parse(text: str, schema: str, source: str, checked: bool = True) -> Mapping[str, Any]:
    """`checked=False` is for the files kubegap ships: tests/test_schema.py checks each against its
    schema, which here would cost 30-60 ms at every start (the validators and a walk of every file)."""
    try:
        document = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as err:
        raise PolicyError(f"{source}: not valid YAML: {err}") from err
    if checked:
        return check(document, schema, source)
    if not isinstance(document, Mapping):  # a damaged installation, not a user's file
        raise PolicyError(f"{source}: not a {schema} file: reinstall kubegap")
    return document
