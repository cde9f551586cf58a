"""What the docs point at exists for users: no file of the project cites the team's private
design notes (every contract is in docs/contracts.md, every hardware source in
docs/hardware.md), and every relative link of the README and docs/ reaches a file, and a
heading when it names one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import ROOT

#: Not the project's files: version control, the virtual environment, caches and build output
#: (the .gitignore's folders).
SKIP = {".git", ".venv", ".hypothesis", ".pytest_cache", "__pycache__", "build", "dist", "out"}
#: Spelled in pieces, so this file does not match itself.
PRIVATE = ("design" + ".md", "shared" + "/")


def _project_files():
    stack = [ROOT]
    while stack:
        folder = stack.pop()
        for path in sorted(folder.iterdir()):
            if path.is_dir():
                if path.name not in SKIP and not path.name.endswith(".egg-info"):
                    stack.append(path)
            elif path.is_file():
                yield path


def test_no_file_cites_the_private_notes():
    found = []
    for path in _project_files():
        data = path.read_bytes()
        found += [(str(path.relative_to(ROOT)), word) for word in PRIVATE
                  if word.encode() in data]
    assert found == []


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _links():
    for page in PAGES:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
        for target in _LINK.findall(text):
            if not re.match(r"[a-z]+:", target):         # http:, https:, mailto:
                yield page, target


@pytest.mark.parametrize("page,target", list(_links()),
                         ids=[f"{p.name}->{t}" for p, t in _links()])
def test_every_relative_link_reaches_a_file(page, target):
    file, _, anchor = target.partition("#")
    dest = (page.parent / file).resolve() if file else page
    assert dest.exists(), f"{page.name}: {target} does not exist"
    if anchor and dest.suffix == ".md":
        assert anchor in _anchors(dest), f"{page.name}: no heading #{anchor} in {dest.name}"


def test_the_contracts_and_sources_pages_are_linked():
    readme = (ROOT / "README.md").read_text()
    assert "](docs/contracts.md)" in readme
    assert "docs/hardware.md" in (ROOT / "library/nvidia/devices.topo").read_text()
