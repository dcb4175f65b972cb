"""The documentation's examples as a reader runs them (docs/testing.md, "Docs that run").

A page's runnable examples are its fenced ```sh (or ```bash) and ```python blocks, in page
order. The shell blocks run in ONE bash per page, from the checkout, so variables set by one
block (the page's setup lines, captured ids) serve the next; each block runs with `set -e`. A
```python block is run by the venv's python (the SDK and `standardwebhooks` are there). Before
running, the test does what a reader does with what `make run` printed: the placeholder key
`sf_...` becomes the demo's key and `http://127.0.0.1:8000` the server's address.

What each block must answer:

- an HTML comment right before the block, `<!-- docs-run: expect 201 409 -->`: the HTTP
  statuses of its curl calls, in order;
- else, when the next block (at most one blank line between) is an answer (```json, ```text
  or a bare fence) starting with a status line `HTTP/1.1 401 ...`: its last curl call answers
  that;
- every other curl call answers below 400.

When that answer block holds JSON (after the status line and headers, if any), the last JSON
value the block printed has every field it shows, recursively (`"..."` stands for the rest),
and the same `code` / `error` where it shows one.

`<!-- docs-run: skip <why> -->` right before a block leaves it out (it starts the service, needs
the outside world, or is a fragment); the page says so in words too.
"""

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "api").glob("*.md"))]
RUNNABLE = {"sh": "shell", "bash": "shell", "python": "python"}
ANSWERS = {"json", "text", ""}
DIRECTIVE = re.compile(r"<!--\s*docs-run:\s*(skip|expect)\b(.*?)-->")
STATUS_LINE = re.compile(r"^HTTP/[\d.]+ (\d{3})")
PLACEHOLDER_KEY = "sf_..."
PLACEHOLDER_BASE = "http://127.0.0.1:8000"
# What the test adds to the reader's shell: curl keeps each call's response headers (the
# statuses), in a folder the runner reads after each block. Nothing else changes.
CURL_RECORDER = r"""
curl() {
  command curl -D "$DOCS_RUN_CALLS/$(date +%s%N).$BASHPID" "$@"
}
"""


@dataclass
class Block:
    page: str
    line: int
    kind: str  # "shell" or "python"
    text: str
    skip: str | None = None
    expect: list[int] | None = None
    answer: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def fences(text: str) -> list[dict]:
    """Each fenced block: its first line's number, language, body, the lines between the
    previous block (or the page's start) and it, and whether those are all blank."""
    lines = text.splitlines()
    found = []
    index = 0
    previous_end = -1
    while index < len(lines):
        opening = re.match(r"^( *)```(\w*)\s*$", lines[index])
        if not opening:
            index += 1
            continue
        indent, language = len(opening.group(1)), opening.group(2)
        start = index
        index += 1
        while index < len(lines) and not lines[index].lstrip().startswith("```"):
            index += 1
        between = lines[previous_end + 1 : start]
        found.append(
            {
                "line": start + 1,
                "language": language,
                # a block in a list item is indented: the reader copies it without
                "body": "\n".join(line[indent:] for line in lines[start + 1 : index]),
                "before": [line for line in between if line.strip()],
                # an answer follows its command right away: at most one blank line, no prose
                "adjacent": previous_end >= 0
                and len(between) <= 1
                and not "".join(between).strip(),
            }
        )
        previous_end = index
        index += 1
    return found


def blocks_of(path: Path) -> list[Block]:
    """The page's runnable blocks, each with its directive and its answer block."""
    found = fences(path.read_text())
    blocks = []
    for position, fence in enumerate(found):
        if fence["language"] not in RUNNABLE:
            continue
        kind = RUNNABLE[fence["language"]]
        block = Block(path.relative_to(ROOT).as_posix(), fence["line"], kind, fence["body"])
        for directive in DIRECTIVE.finditer("\n".join(fence["before"][-1:])):
            if directive.group(1) == "skip":
                block.skip = directive.group(2).strip() or "marked"
            else:
                block.expect = [int(status) for status in directive.group(2).split()]
        if position + 1 < len(found):
            answer = found[position + 1]
            if answer["language"] in ANSWERS and answer["adjacent"]:
                block.answer = answer["body"]
        blocks.append(block)
    return blocks


def shown(answer: str | None) -> tuple[int | None, object]:
    """The status line's status and the JSON value an answer block shows (None when not)."""
    if answer is None:
        return None, None
    status = None
    body = answer
    first = answer.lstrip().splitlines()[0] if answer.strip() else ""
    if match := STATUS_LINE.match(first):
        status = int(match.group(1))
        body = answer.split("\n\n", 1)[1] if "\n\n" in answer else ""
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def last_json(output: str) -> object:
    """The last JSON object or array the block printed (after headers, between other lines)."""
    decoder = json.JSONDecoder()
    value = None
    index = 0
    while index < len(output):
        if output[index] in "{[":
            try:
                value, end = decoder.raw_decode(output, index)
                index = end
                continue
            except ValueError:
                pass
        index += 1
    return value


ELLIPSES = {"...", "…"}


def missing_fields(expected, actual, where: str = "") -> list[str]:
    """What `expected` (the page's JSON) shows that `actual` (the answer) lacks."""
    problems = []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where or 'answer'}: an object expected, got {type(actual).__name__}"]
        for key, value in expected.items():
            if key in ELLIPSES:
                continue
            if key not in actual:
                problems.append(f"{where}{key}: missing")
                continue
            shown_value = key in {"code", "error"} and not where and isinstance(value, str)
            if shown_value and value not in ELLIPSES and actual[key] != value:
                problems.append(f"{key}: {actual[key]!r}, the page shows {value!r}")
            problems += missing_fields(value, actual[key], f"{where}{key}.")
    elif isinstance(expected, list) and expected:
        if not isinstance(actual, list) or not actual:
            return [f"{where or 'answer'}: items expected, got {actual!r:.80}"]
        for index, item in enumerate(expected):
            if index < len(actual) and not (isinstance(item, str) and item in ELLIPSES):
                problems += missing_fields(item, actual[index], f"{where}{index}.")
    return problems


class PageRun:
    """One bash process for a page: blocks go in one by one; each answers its output, the exit
    status and the statuses of its curl calls."""

    def __init__(self, workdir: Path, environment: dict, *, base: str, key: str):
        self.workdir = workdir
        self.calls = workdir / "calls"
        self.calls.mkdir(parents=True, exist_ok=True)
        self.base = base
        self.key = key
        self.count = 0
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=ROOT,
            env={**environment, "DOCS_RUN_CALLS": str(self.calls)},
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.send(CURL_RECORDER)

    def send(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def reader_text(self, text: str) -> str:
        return text.replace(PLACEHOLDER_BASE, self.base).replace(PLACEHOLDER_KEY, self.key)

    def run(self, block: Block, *, timeout: float = 60) -> tuple[int, str, list[int]]:
        self.count += 1
        script = self.workdir / f"block-{self.count}.{'py' if block.kind == 'python' else 'sh'}"
        output = self.workdir / f"block-{self.count}.out"
        done = self.workdir / f"block-{self.count}.rc"
        script.write_text(self.reader_text(block.text) + "\n")
        if block.kind == "python":
            command = f".venv/bin/python {script}"
        else:
            command = f"set -e; source {script}; set +e"
        self.send(f"{{ {command}; }} > {output} 2>&1 < /dev/null; echo $? > {done}")
        deadline = time.monotonic() + timeout
        while not done.exists() or not done.read_text().strip():
            if self.process.poll() is not None:  # `set -e` ended the shell
                return self.process.returncode or 1, self._read(output), self._statuses()
            if time.monotonic() > deadline:
                return -1, self._read(output) + f"\n(no end within {timeout:g} s)", []
            time.sleep(0.02)
        return int(done.read_text()), self._read(output), self._statuses()

    @staticmethod
    def _read(path: Path) -> str:
        return path.read_text(errors="replace") if path.exists() else ""

    def _statuses(self) -> list[int]:
        statuses = []
        for headers in sorted(self.calls.iterdir(), key=lambda path: int(path.name.split(".")[0])):
            lines = [line for line in headers.read_text(errors="replace").splitlines() if line]
            status_lines = [STATUS_LINE.match(line) for line in lines]
            found = [int(match.group(1)) for match in status_lines if match]
            statuses.append(found[-1] if found else 0)
            headers.unlink()
        return statuses

    def close(self) -> None:
        # the page's background processes (a receiver) are in its session, also once the
        # shell itself has ended
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        self.process.wait(timeout=10)


def check(block: Block, returncode: int, output: str, statuses: list[int]) -> list[str]:
    """What is wrong with a block's run, against what the page shows."""
    problems = []
    if returncode != 0:
        problems.append(f"exit status {returncode}")
    status, answer = shown(block.answer)
    if block.expect is not None:
        if statuses != block.expect:
            problems.append(f"statuses {statuses}, the page expects {block.expect}")
    else:
        expected = [None] * len(statuses)
        if status is not None and statuses:
            expected[-1] = status
        for got, want in zip(statuses, expected, strict=True):
            if (want is not None and got != want) or (want is None and not 200 <= got < 400):
                problems.append(f"statuses {statuses}, the page shows {status or 'success'}")
                break
    if answer is not None and isinstance(answer, dict | list):
        problems += missing_fields(answer, last_json(output))
    return problems
