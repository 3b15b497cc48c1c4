"""The documentation holds up when followed: every relative link resolves (to a file, and to a heading
where it names one), and every `kubegap` command its code shows runs: the subcommand exists and each flag,
and each flag value with fixed choices, is one its parser knows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import docs

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        ROOT / "AGENTS.md",
        ROOT / ".claude" / "skills" / "kubegap" / "SKILL.md",
        ROOT / "charts" / "kubegap" / "README.md",
    ]
)
# Pages linked before they land (a page being written alongside the one linking it) may be named here,
# briefly: a missing one is allowed, its anchors are checked once it exists. Empty when nothing is pending.
COMING: frozenset[Path] = frozenset()


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert list(docs.link_problems(page, COMING)) == []


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_command_shown_is_one_kubegap_takes(page: Path) -> None:
    shown = docs.commands(docs.read(page))
    assert [problem for command in shown for problem in docs.command_problems(command)] == []


def test_the_docs_index_lists_every_page() -> None:
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / link.partition("#")[0]).resolve() for link in docs.links(index)}
    pages = {page.resolve() for page in (ROOT / "docs").glob("*.md")} - {index.resolve()}
    assert sorted(p.name for p in pages - listed) == []


def test_the_pages_show_every_subcommand() -> None:
    shown = {c.split()[1] for page in PAGES for c in docs.commands(docs.read(page))}
    assert shown == set(docs.options())


def test_a_made_up_flag_subcommand_or_value_is_caught() -> None:
    assert docs.command_problems("kubegap lint --no-such-flag deploy/") == [
        "`kubegap lint --no-such-flag deploy/`: kubegap lint has no --no-such-flag"
    ]
    assert docs.command_problems("kubegap frobnicate --format json") == [
        "`kubegap frobnicate --format json`: no subcommand 'frobnicate'"
    ]
    assert len(docs.command_problems("kubegap audit --format yaml")) == 1
    assert len(docs.command_problems("kubegap policies explain nccl-timeout")) == 1
    piped = "kubegap audit --all-namespaces | kubectl apply --dry-run -f -"
    assert docs.command_problems(piped) == [f"`{piped}`: kubegap audit has no --all-namespaces"]
    # (--dry-run and -f, after the pipe, are kubectl's)


def test_commands_are_found_where_a_shell_would_run_them(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `kubegap lint --jobs 2 deploy/` or:\n\n"
        "```sh\n"
        "helm template t ./chart | .venv/bin/kubegap lint \\\n  --fail-on medium -   # stdin\n"
        "kubectl label namespace kubegap team=ml\n"
        "```\n\n"
        "```text\nkubegap cost model: printed, not typed\n```\n",
        "utf-8",
    )
    assert list(docs.commands(docs.read(page))) == [
        "kubegap lint --fail-on medium -",
        "kubegap lint --jobs 2 deploy/",
    ]


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## `kubegap lint`: options\n", "utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[fine](other.md#kubegap-lint-options) [here](#page) [web](https://example.com/x.md)\n"
        "[gone](missing.md) [no heading](other.md#nothing) `[in code](missing-too.md)`\n\n"
        "```sh\n# not a heading\n```\n",
        "utf-8",
    )
    assert list(docs.link_problems(page)) == [
        "page.md: link 'missing.md': no file missing.md",
        "page.md: link 'other.md#nothing': other.md has no heading #nothing",
    ]
    assert list(docs.link_problems(page, frozenset({(tmp_path / "missing.md").resolve()}))) == [
        "page.md: link 'other.md#nothing': other.md has no heading #nothing"
    ]
    assert "not-a-heading" not in docs.anchors(page)


def test_slugs_follow_github() -> None:
    assert docs.slug("Configuration: the `webhook:` section") == "configuration-the-webhook-section"
    assert docs.slug("`nccl-timeout` — collectives fail fast") == "nccl-timeout--collectives-fail-fast"
    assert docs.slug("Emergency: failurePolicy is Fail") == "emergency-failurepolicy-is-fail"
