"""The suite's pytest-xdist file scheduler (tests/scheduling.py), driven as xdist's controller
drives it, with workers that record what they are sent."""

from types import SimpleNamespace

from tests.scheduling import FIRST_WORKER_FILES, LOW_WATER, FileScheduling

CONTRACT = FIRST_WORKER_FILES[0]


class Worker:
    def __init__(self, name):
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indexes):
        self.sent.extend(indexes)

    def shutdown(self):
        self.shutting_down = True


def scheduler_with(collection, *names):
    config = SimpleNamespace(getvalue=lambda name: [f"{len(names)}*popen"])
    scheduler = FileScheduling(config)
    workers = [Worker(name) for name in names]
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    return scheduler, workers


def files_sent(worker, collection):
    return list(dict.fromkeys(collection[index].split("::")[0] for index in worker.sent))


def finish(scheduler, worker, collection):
    for index in list(worker.sent):
        scheduler.mark_test_complete(worker, index)


def test_the_first_worker_starts_with_the_contract_run_wherever_it_stands():
    # given the contract run third in the order, and the first worker ready last
    collection = [
        *(f"tests/long.py::test_{n}" for n in range(5)),
        *(f"tests/longer.py::test_{n}" for n in range(5)),
        *(f"{CONTRACT}::test[{n}]" for n in range(5)),
        *(f"tests/short_{n}.py::test" for n in range(6)),
    ]
    _, (gw2, gw1, gw0) = scheduler_with(collection, "gw2", "gw1", "gw0")

    assert files_sent(gw0, collection) == [CONTRACT]
    assert files_sent(gw2, collection) == ["tests/long.py"]
    assert files_sent(gw1, collection) == ["tests/longer.py"]


def test_a_worker_gets_the_next_file_in_order_when_it_is_nearly_done():
    collection = [f"tests/file_{n}.py::test_{m}" for n in range(4) for m in range(4)]
    scheduler, (gw0, gw1) = scheduler_with(collection, "gw0", "gw1")
    assert files_sent(gw0, collection) == ["tests/file_0.py"]

    # when it has LOW_WATER tests left, the next file in order is sent
    for index in gw0.sent[: 4 - LOW_WATER]:
        scheduler.mark_test_complete(gw0, index)

    assert files_sent(gw0, collection) == ["tests/file_0.py", "tests/file_2.py"]
    assert files_sent(gw1, collection) == ["tests/file_1.py"]


def test_every_test_runs_once_and_every_worker_is_told_the_end():
    collection = [f"tests/file_{n}.py::test_{m}" for n in range(7) for m in range(n + 1)]
    scheduler, workers = scheduler_with(collection, "gw0", "gw1", "gw2")

    while scheduler.has_pending:
        for worker in workers:
            finish(scheduler, worker, collection)

    assert sorted(index for worker in workers for index in worker.sent) == list(
        range(len(collection))
    )
    assert all(worker.shutting_down for worker in workers)
    assert scheduler.tests_finished


def test_the_files_of_a_crashed_worker_go_to_the_worker_that_replaces_it():
    collection = [f"tests/file_{n}.py::test_{m}" for n in range(2) for m in range(5)]
    scheduler, (gw0, _) = scheduler_with(collection, "gw0", "gw1")
    scheduler.mark_test_complete(gw0, gw0.sent[0])

    crashed = scheduler.remove_node(gw0)
    # xdist starts a new worker, which collects and is scheduled
    gw2 = Worker("gw2")
    scheduler.add_node(gw2)
    scheduler.add_node_collection(gw2, collection)
    scheduler.schedule()

    assert crashed == "tests/file_0.py::test_1"
    assert [collection[index] for index in gw2.sent] == [
        f"tests/file_0.py::test_{m}" for m in range(1, 5)
    ]
