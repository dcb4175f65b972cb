"""How pytest-xdist hands the suite's files to its workers under `--dist loadfile`: one file at
a time per worker, in the collection's order (longest first, tests/ordering.py), and the files of
FIRST_WORKER_FILES to the first worker (gw0) before anything else.

The pin is what lets those files build their costly parts at collection on that worker alone: every
worker collects every file, and the contract run's coverage phase (schemathesis) builds its examples
when the file is collected, although one worker runs it (docs/decisions/suite.md "Where the wall
clock goes, and the contract run's examples built once"). xdist offers no pin, but it takes a
scheduler of ours through its public hook `pytest_xdist_make_scheduler` (tests/conftest.py); this is
that scheduler, written against xdist's scheduling protocol (`xdist.scheduler.protocol.Scheduling`),
and otherwise what xdist's own file scheduling does.
"""

import os
from collections import OrderedDict

import pytest
from xdist.report import report_collection_diff
from xdist.workermanage import parse_tx_spec_config

FIRST_WORKER = "gw0"
# Files whose collection builds what only the worker running them needs.
FIRST_WORKER_FILES = ("tests/core/api/test_contract.py",)
# Tests a worker holds before it is given another file: it keeps its last test until it knows
# what comes next (pytest's teardown needs `nextitem`), as xdist's own schedulers allow for.
LOW_WATER = 2


def runs_first_worker_files() -> bool:
    """True in the process that runs FIRST_WORKER_FILES: the first xdist worker, or pytest
    without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", FIRST_WORKER) == FIRST_WORKER


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class FileScheduling:
    """Files, longest first, one at a time to whichever worker is nearly out of work; the first
    worker starts with FIRST_WORKER_FILES."""

    def __init__(self, config: pytest.Config, log=None):
        self.config = config
        self.numnodes = len(parse_tx_spec_config(config))
        self.collection: list[str] | None = None
        self.queue: OrderedDict[str, dict[str, bool]] = OrderedDict()  # file -> {id: done}
        self.assigned: dict = {}  # node -> {file: {id: done}}
        self.collections: dict = {}  # node -> the node ids it collected, in order
        self.positions: dict = {}  # node -> {node id: its index in that node's collection}

    @property
    def nodes(self) -> list:
        return list(self.assigned)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.collections) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.queue:
            return False
        return all(self._pending(work) < LOW_WATER for work in self.assigned.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.queue) or any(self._pending(work) for work in self.assigned.values())

    def add_node(self, node) -> None:
        assert node not in self.assigned
        self.assigned[node] = {}

    def add_node_collection(self, node, collection) -> None:
        assert node in self.assigned
        if self.collection_is_completed and list(collection) != self.collection:
            return  # a worker that replaced a crashed one and collected something else: unused
        self.collections[node] = list(collection)
        self.positions[node] = {nodeid: index for index, nodeid in enumerate(collection)}

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        nodeid = self.collections[node][item_index]
        self.assigned[node][file_of(nodeid)][nodeid] = True
        self._reschedule(node)

    def mark_test_pending(self, item: str) -> None:
        raise NotImplementedError

    def remove_pending_tests_from_node(self, node, indices) -> None:
        raise NotImplementedError

    def remove_node(self, node) -> str | None:
        """Called when a worker ends; when it crashed, its unfinished files go back to the front
        of the queue and the test it was running is returned."""
        work = self.assigned.pop(node)
        unfinished = [(path, tests) for path, tests in work.items() if not all(tests.values())]
        if not unfinished:
            return None
        crashed = next(
            nodeid for _, tests in unfinished for nodeid, done in tests.items() if not done
        )
        for path, tests in reversed(unfinished):
            self.queue[path] = tests
            self.queue.move_to_end(path, last=False)
        for other in self.assigned:
            self._reschedule(other)
        return crashed

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:  # a worker added later
            for node in self.nodes:
                self._reschedule(node)
            return
        if not self._same_collections():
            return
        self.collection = next(iter(self.collections.values()))
        for nodeid in self.collection:
            self.queue.setdefault(file_of(nodeid), {})[nodeid] = False
        first = [node for node in self.nodes if node.gateway.id == FIRST_WORKER]
        for node in first:
            for path in FIRST_WORKER_FILES:
                if path in self.queue:
                    self._assign(node, path)
        for node in self.nodes:
            if not self.assigned[node] and self.queue:
                self._assign(node, next(iter(self.queue)))
        for node in self.nodes:
            self._reschedule(node)
        if not self.queue:
            for node in self.nodes:
                node.shutdown()

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if not self.queue:
            node.shutdown()
            return
        if self._pending(self.assigned[node]) > LOW_WATER:
            return
        self._assign(node, next(iter(self.queue)))

    def _assign(self, node, path: str) -> None:
        tests = self.queue.pop(path)
        self.assigned[node][path] = tests
        positions = self.positions[node]
        node.send_runtest_some([positions[nodeid] for nodeid, done in tests.items() if not done])

    @staticmethod
    def _pending(work: dict) -> int:
        return sum(not done for tests in work.values() for done in tests.values())

    def _same_collections(self) -> bool:
        """As xdist's schedulers: workers that collected different tests fail the run."""
        (first_node, first), *others = self.collections.items()
        same = True
        for node, collection in others:
            message = report_collection_diff(
                first, collection, first_node.gateway.id, node.gateway.id
            )
            if message:
                same = False
                self.config.hook.pytest_collectreport(
                    report=pytest.CollectReport(
                        nodeid=node.gateway.id, outcome="failed", longrepr=message, result=[]
                    )
                )
        return same
