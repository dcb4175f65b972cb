"""CPU of one settings test's process: a new interpreter (`python -c`, the reference) against a
child forked from tests/fresh_python.py's preloaded process (docs/decisions/suite.md "The
settings tests' processes"). Each loads the production settings as
tests/configuration/test_settings.py does, N times per round, best of ROUNDS rounds; CPU time
(user + system) of the finished children, which a loaded machine changes far less than their
wall time. Run under bin/with-test-services (its DATABASE_URL and REDIS_URL):

    bin/with-test-services .venv/bin/python bench/settings_processes.py
"""

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fresh_python import ForkingPython
from tests.settings_helpers import LOAD_SETTINGS, ROOT, production_environment

N = 10
ROUNDS = 3


def children_cpu(pid: int | None = None) -> float:
    """CPU seconds of the waited-for children of this process, or of process `pid`."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def best(run, cpu) -> tuple[float, float]:
    """(CPU s, wall s) per process, best round of each."""
    cpu_best = wall_best = float("inf")
    for _ in range(ROUNDS):
        cpu_before, started = cpu(), time.monotonic()
        for _ in range(N):
            result = run()
            assert result.returncode == 0 and result.stdout.strip() == "False", result.stderr
        cpu_best = min(cpu_best, (cpu() - cpu_before) / N)
        wall_best = min(wall_best, (time.monotonic() - started) / N)
    return cpu_best, wall_best


def main():
    env = production_environment()
    forking = ForkingPython()
    argv = ["-c", LOAD_SETTINGS]
    forking.run(argv, env=env, cwd=ROOT, timeout=60)  # the preloading process's own start
    server = forking.process.pid
    interpreter = best(
        lambda: subprocess.run(
            [sys.executable, *argv], env=env, cwd=ROOT, capture_output=True, text=True
        ),
        children_cpu,
    )
    forked = best(
        lambda: forking.run(argv, env=env, cwd=ROOT, timeout=60), lambda: children_cpu(server)
    )
    forking.close()
    print(f"{'':24}{'CPU s':>8}{'wall s':>8}")
    print(f"{'new interpreter (ref.)':24}{interpreter[0]:8.3f}{interpreter[1]:8.3f}")
    print(f"{'forked child':24}{forked[0]:8.3f}{forked[1]:8.3f}")
    cpu_ratio, wall_ratio = forked[0] / interpreter[0], forked[1] / interpreter[1]
    print(f"ratio forked/new: CPU {cpu_ratio:.2f}, wall {wall_ratio:.2f}")


if __name__ == "__main__":
    main()
