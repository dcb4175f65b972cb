"""The repository explains itself (docs/style.md rule 13): every document a tracked file points
at is in the repository. Markdown links are resolved from the file that holds them, citations
of pages under docs/ (in code comments as in prose) from the repository's root, and so are the
repository's paths written in backticks (a test file, a bench script, a config module), so a move
breaks the build until its mentions move too; the design and the house style are cited by their
paths in docs/, never by names of files outside it."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# [text](target): the target up to a space, a closing parenthesis or an anchor.
MARKDOWN_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?(?:\s+\"[^\"]*\")?\)")
DOCS_CITATION = re.compile(r"(?<![\w./-])docs/[\w./-]+?\.md\b")
# `tests/core/api/test_schema.py`, `config/`: a path of ours in backticks, up to a `::test` or a
# space.
TOP_LEVEL = (
    "accounts|bench|bin|config|console|core|coupons|deploy|devtools|docs|events|oauth_cli|orders"
    "|requirements|stores|templates|tests|webhooks"
)
BACKTICKED_PATH = re.compile(rf"`((?:{TOP_LEVEL})/[\w./-]*?)(?:::[^`]*)?`")
# A paragraph about another project (the style anchors) names that project's paths, not ours.
OUTSIDE_PROJECT = re.compile(r"NetBox|Zulip|Saleor|HackSoft|django-oauth-toolkit's", re.I)
# The design and the style under their old names, cited as if they were in the repository.
OUTSIDE_NAMES = re.compile(r"(?<![\w/])(?:DESIGN|STYLE)\.md\b")


def tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
    ).stdout
    paths = [ROOT / name for name in listed.split("\0") if name]
    return [path for path in paths if path.is_file() and _is_text(path)]


def _is_text(path: Path) -> bool:
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _where(path: Path, text: str, offset: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"


def test_every_relative_markdown_link_resolves():
    broken = []
    for path in tracked_files():
        if path.suffix != ".md":
            continue
        text = path.read_text(encoding="utf-8")
        for match in MARKDOWN_LINK.finditer(text):
            target = match.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
                continue  # a URL (https:, mailto:) or a path of the running service
            if not (path.parent / target).exists():
                broken.append(f"{_where(path, text, match.start())}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_every_cited_docs_page_exists():
    missing = []
    for path in tracked_files():
        text = path.read_text(encoding="utf-8")
        for match in DOCS_CITATION.finditer(text):
            if not (ROOT / match.group(0)).is_file():
                missing.append(f"{_where(path, text, match.start())}: {match.group(0)}")
    assert not missing, "cited pages that do not exist:\n" + "\n".join(missing)


def test_every_backticked_repository_path_exists():
    missing = []
    for path in tracked_files():
        text = path.read_text(encoding="utf-8")
        for paragraph_start, paragraph in _paragraphs(text):
            if OUTSIDE_PROJECT.search(paragraph):
                continue
            for match in BACKTICKED_PATH.finditer(paragraph):
                cited = match.group(1)
                if not (ROOT / cited).exists():
                    where = _where(path, text, paragraph_start + match.start())
                    missing.append(f"{where}: {cited}")
    assert not missing, "backticked paths that do not exist:\n" + "\n".join(missing)


def _paragraphs(text: str):
    start = 0
    for separator in re.finditer(r"\n\s*\n", text):
        yield start, text[start : separator.start()]
        start = separator.end()
    yield start, text[start:]


def test_the_design_and_the_style_are_cited_by_their_paths_in_docs():
    outside = []
    for path in tracked_files():
        text = path.read_text(encoding="utf-8")
        for match in OUTSIDE_NAMES.finditer(text):
            outside.append(f"{_where(path, text, match.start())}: {match.group(0)}")
    assert not outside, "cite docs/design.md and docs/style.md instead:\n" + "\n".join(outside)
