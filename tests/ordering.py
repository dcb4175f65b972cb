"""The order the suite's files start in: longest first, by tests/durations.json (each file's
seconds in a measured run of the whole suite; `devtools/test_durations.py` writes it).

Under `pytest -n 3 --dist loadfile` the run ends when its busiest worker does. pytest-xdist
hands out files in the collection's order (pyproject.toml's addopts turn off its own reordering by
number of tests, which sent the files of a few long tests, the fault and image runs, last,
where one of them made the run's tail alone). Longest first, the short files fill the gaps at
the end (docs/decisions/suite.md "Longest files first").
"""

import json
from collections import Counter
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
# A file missing from the record (a new one): its tests at the suite's mean, 0.7 s each.
MEAN_TEST_SECONDS = 0.7


def longest_files_first(items: list) -> None:
    """Sorts `items` in place by their file's recorded seconds, longest first, then by path:
    files of equal seconds must not interleave (pytest-django has already ordered the tests of
    all files by their kind of database use); a file's tests keep their order (a stable sort on
    the file alone)."""
    recorded = json.loads(DURATIONS.read_text())
    counts = Counter(item.nodeid.split("::")[0] for item in items)

    def seconds(item) -> float:
        path = item.nodeid.split("::")[0]
        return recorded.get(path, counts[path] * MEAN_TEST_SECONDS)

    items.sort(key=lambda item: (-seconds(item), item.nodeid.split("::")[0]))
