"""Redaction of values that look like credentials before any text leaves the server.

Findings echo settings (an env value that is not a number, a flag's value): a token pasted into the wrong
variable must not travel on into an agent's context. The patterns are the shapes of widely issued tokens
plus a generic rule for long opaque strings; a false positive costs one unreadable value, a miss costs a
credential, so the generic rule leans towards redacting.
"""

from __future__ import annotations

import re

MARK = "[REDACTED]"

_SHAPES = [
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",  # JWT (service-account tokens)
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"\bsk-[A-Za-z0-9_-]{20,}",  # OpenAI-style API keys
    r"\bAIza[0-9A-Za-z_-]{30,}",  # Google API key
]
_SHAPE = re.compile("|".join(f"(?:{s})" for s in _SHAPES))
# NAME=VALUE or NAME: VALUE where the name says what the value is; the name stays readable.
_ASSIGNED = re.compile(
    r"(?i)\b([A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"credential)s?[A-Za-z0-9_.-]*)(\s*[=:]\s*)([^\s,;'\")]+)"
)
# `/` is left out so that file paths stay readable ('=' only as base64 padding, so NAME=value splits).
_OPAQUE = re.compile(r"[A-Za-z0-9+_-]{32,}={0,2}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _opaque(match: re.Match[str]) -> str:
    """Long strings mixing upper case, lower case and digits, or long hex: keys, not Kubernetes names."""
    text = match.group(0)
    if _UUID.fullmatch(text):
        return text
    mixed = (
        any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text)
    )
    hexadecimal = len(text) >= 32 and all(c in "0123456789abcdefABCDEF" for c in text)
    return MARK if mixed or hexadecimal else text


def redact(text: str) -> str:
    text = _SHAPE.sub(MARK, text)
    text = _ASSIGNED.sub(lambda m: m.group(1) + m.group(2) + MARK, text)
    return _OPAQUE.sub(_opaque, text)
