"""The one root exception and its few subclasses; every expected failure is a KubegapError."""

from __future__ import annotations


class KubegapError(Exception):
    """An expected failure with a message meant for the user (exit code 2 in the CLI)."""


class PolicyError(KubegapError):
    """A policy, knob catalogue or configuration file is invalid; raised at load time, never mid-run."""


class UsageError(KubegapError):
    """A command-line or configuration value is wrong."""
