"""Writes tests/durations.json, each test file's seconds in a measured run, from the JUnit XML
report of that run: `pytest ... --junitxml=report.xml`, then `python -m devtools.test_durations
report.xml`. The suite starts its files longest first under pytest-xdist (tests/ordering.py);
the figures only order the files, so a stale file costs time, never a result.
"""

import argparse
import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "durations.json"


def test_file(classname: str) -> str:
    """The file of a JUnit class name: the module's dotted path, with a class name after it
    when the test is a method."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (ROOT / path).is_file():
            return path
    raise SystemExit(f"no test file for {classname}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a pytest --junitxml report of the whole suite")
    arguments = parser.parse_args()
    seconds: dict[str, float] = defaultdict(float)
    # our own pytest run's report, not untrusted input
    for case in ET.parse(arguments.report).iter("testcase"):  # noqa: S314
        seconds[test_file(case.get("classname"))] += float(case.get("time", 0))
    ordered = dict(
        sorted(((path, round(s, 1)) for path, s in seconds.items()), key=lambda x: -x[1])
    )
    TARGET.write_text(json.dumps(ordered, indent=1) + "\n")


if __name__ == "__main__":
    main()
