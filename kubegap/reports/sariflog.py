"""The SARIF 2.1.0 objects kubegap writes, as typed wire structures (the subset it uses, field names as the
standard spells them)."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class Message(TypedDict):
    text: str


class MultiformatMessage(TypedDict, total=False):
    text: str
    markdown: str


class ArtifactLocation(TypedDict, total=False):
    uri: str
    uriBaseId: str


class Region(TypedDict, total=False):
    startLine: int
    startColumn: int
    endLine: int
    endColumn: int


class ArtifactContent(TypedDict):
    text: str


class Replacement(TypedDict):
    deletedRegion: Region  # an empty region for an insertion
    insertedContent: ArtifactContent


class ArtifactChange(TypedDict):
    artifactLocation: ArtifactLocation
    replacements: list[Replacement]


class Fix(TypedDict):
    description: Message
    artifactChanges: list[ArtifactChange]


class PhysicalLocation(TypedDict):
    artifactLocation: ArtifactLocation
    region: Region


class LogicalLocation(TypedDict, total=False):
    name: str
    fullyQualifiedName: str
    kind: str
    properties: dict[str, Any]


class Location(TypedDict, total=False):
    physicalLocation: PhysicalLocation
    logicalLocations: list[LogicalLocation]


class Suppression(TypedDict):
    kind: str  # inSource: the exemption is an annotation in the manifest itself
    justification: str


class Result(TypedDict, total=False):
    ruleId: str
    ruleIndex: int
    level: str
    message: Message
    locations: list[Location]
    partialFingerprints: dict[str, str]
    suppressions: list[Suppression]
    fixes: list[Fix]
    properties: dict[str, Any]


class ReportingConfiguration(TypedDict):
    level: str


class ReportingDescriptor(TypedDict):
    id: str
    name: str
    shortDescription: MultiformatMessage
    fullDescription: MultiformatMessage
    defaultConfiguration: ReportingConfiguration
    help: MultiformatMessage
    helpUri: NotRequired[str]  # the rule's documentation (bundled policies only)
    properties: dict[str, Any]  # tags, precision, security-severity


class ToolComponent(TypedDict):
    name: str
    version: str
    semanticVersion: str
    rules: list[ReportingDescriptor]


class Tool(TypedDict):
    driver: ToolComponent


class Run(TypedDict, total=False):
    tool: Tool
    columnKind: str
    originalUriBaseIds: dict[str, ArtifactLocation]
    results: list[Result]
    properties: dict[str, Any]


Log = TypedDict("Log", {"$schema": str, "version": str, "runs": list[Run]})
