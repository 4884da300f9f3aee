"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and an
``#anchor`` names a heading of that page (as GitHub makes heading anchors)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.pages import REPO, name, pages

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)

# Pages another engineer is writing at the same time: a link to one is not an error while the
# page is missing (once it exists it is checked like any other; the entry can then go).
PENDING = {"docs/demo.md": "the offline demo's walk-through (the `commands` engineer)"}


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", FENCE.sub("", page.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken(page: Path) -> list[str]:
    problems = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        shown = str(file.relative_to(REPO)) if file.is_relative_to(REPO) else str(file)
        if not file.exists():
            if shown not in PENDING:
                problems.append(f"{name(page)}: {target} (no {shown})")
            continue
        if anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            problems.append(f"{name(page)}: {target} (no heading #{anchor} in {shown})")
    return problems


def test_every_relative_link_resolves() -> None:
    problems = [problem for page in pages() for problem in broken(page)]
    assert not problems, "\n".join(problems)


def test_the_readme_links_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text()
    missing = [name(p) for p in pages()[1:] if f"]({name(p)}" not in readme]
    assert not missing, f"README.md does not link {missing}"


def test_the_anchor_rules_match_github() -> None:
    page = REPO / "docs" / "reliability.md"
    assert "interleavings-a-model-based-exploration-of-the-engine-testsenginetest_interleavingspy" in anchors(page)
