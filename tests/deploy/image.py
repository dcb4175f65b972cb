"""The production image as operators build and run it, on this machine's Debian
packages: no registry. The base standing in for `python:3.11-slim-bookworm` is made by
mmdebstrap and imported into podman's store; the Dockerfile is built with `podman build`;
its processes run with `buildah run` (chroot isolation, the host's network), as user 10001.

The base tarball is the slow part (about 2 minutes): it is cached under CACHE_DIR, keyed by
the mmdebstrap command and the machine's apt sources (its inputs), and imported again only
when podman's store lacks that key. podman's layer cache keeps the dependency layer while
requirements/run.txt is unchanged.
"""

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
from pathlib import Path

import yaml

from tests.servers import wait_for
from tests.settings_helpers import RANDOM_KEY, ROOT

# What the operator sets (docs/production.md); the rest has the image's defaults.
OPERATOR_ENVIRONMENT = {
    "SECRET_KEY": secrets.token_urlsafe(50),
    "POSTGRES_PASSWORD": "0123456789abcdef",
    "ALLOWED_HOSTS": "127.0.0.1",
    "BASE_URL": "https://api.example.com",
    "STOREFRONT_DOMAIN": "example.com",
    "WORKER_CONCURRENCY": "2",
}
METRICS_TOKEN = secrets.token_urlsafe(24)
# What an operator sets for compose.yaml, as docs/production.md shows it, for the checks that read
# the deployment files without running the image.
COMPOSE_ENVIRONMENT = {
    "SECRET_KEY": RANDOM_KEY,
    "POSTGRES_PASSWORD": "0123456789abcdef",
    "ALLOWED_HOSTS": "api.example.com",
    "BASE_URL": "https://api.example.com",
    "STOREFRONT_DOMAIN": "example.com",
}


BASE_IMAGE = "python:3.11-slim-bookworm"
IMAGE = "localhost/storefront:test"
MMDEBSTRAP = [
    "mmdebstrap",
    "--variant=minbase",
    "--include=python3,python3-venv,python-is-python3,ca-certificates",
    "bookworm",
]
CACHE_DIR = Path(
    os.environ.get("STOREFRONT_TEST_CACHE", Path.home() / ".cache" / "storefront-tests")
)
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
UID = "10001:10001"


def run(command: list[str], *, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, (
        f"{command[:4]}...\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    )
    return result


def base_key() -> str:
    sources = sorted(Path("/etc/apt").glob("sources.list*")) + sorted(
        Path("/etc/apt/sources.list.d").glob("*")
    )
    inputs = [" ".join(MMDEBSTRAP)] + [p.read_text() for p in sources if p.is_file()]
    return hashlib.sha256("\n".join(inputs).encode()).hexdigest()[:16]


def ensure_base_image() -> None:
    """The local `python:3.11-slim-bookworm` the Dockerfile's FROM lines find (--pull=never)."""
    key = base_key()
    label = subprocess.run(
        [
            "podman",
            "image",
            "inspect",
            "--format",
            '{{index .Labels "storefront.base"}}',
            BASE_IMAGE,
        ],
        capture_output=True,
        text=True,
    )
    if label.returncode == 0 and label.stdout.strip() == key:
        return
    tarball = CACHE_DIR / f"base-{key}.tar"
    if not tarball.exists():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        partial = CACHE_DIR / f"base-{key}.partial.tar"
        run([*MMDEBSTRAP, "--format=tar", str(partial)], timeout=1200)
        partial.rename(tarball)
        for old in CACHE_DIR.glob("base-*.tar"):
            if old != tarball:
                old.unlink()  # made for other inputs
    run(["podman", "import", "--change", f"LABEL storefront.base={key}", str(tarball), BASE_IMAGE])


def image_id(name: str) -> str | None:
    found = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", name], capture_output=True, text=True
    )
    return found.stdout.strip() if found.returncode == 0 else None


def build_image() -> None:
    ensure_base_image()
    previous = image_id(IMAGE)
    # pip inside the build may need the machine's certificate bundle (a TLS-inspecting proxy).
    mounts = ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"] if Path(CA_BUNDLE).exists() else []
    run(
        ["podman", "build", "--isolation", "chroot", "--pull=never", *mounts, "-t", IMAGE, "."],
        cwd=ROOT,
        timeout=1200,
    )
    # The previous build, now untagged, would keep its 400 MB per run (the cached dependency
    # layer it shares with the new one stays).
    if previous and previous != image_id(IMAGE):
        subprocess.run(["podman", "rmi", previous], capture_output=True)


def image_command() -> list[str]:
    return json.loads(
        run(["podman", "image", "inspect", "--format", "{{json .Config.Cmd}}", IMAGE]).stdout
    )


def compose_config(environment: dict) -> subprocess.CompletedProcess:
    """`docker-compose config` (Debian's compose implementation; it needs no engine)."""
    return subprocess.run(
        ["docker-compose", "--file", str(ROOT / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ["PATH"], **environment},
    )


def compose_services(environment: dict) -> dict:
    result = compose_config(environment)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["services"]


class ImageProcess:
    """One command of the image in a container of its own (`buildah from`), run by `buildah
    run` as the image's user; its output goes to `log_path`. stop() ends the whole group."""

    def __init__(
        self,
        name: str,
        command: list[str],
        environment: dict,
        log_path: Path,
        volumes: dict[str, str],
    ):
        self.name = name
        self.command = command
        self.log_path = log_path
        self.container = run(
            [
                "buildah",
                "from",
                "--pull-never",
                "--name",
                f"storefront-test-{name}-{os.getpid()}",
                IMAGE,
            ]
        ).stdout.strip()
        self.arguments = [
            "buildah",
            "run",
            "--isolation",
            "chroot",
            "--network",
            "host",
            "--user",
            UID,
        ]
        for source, target in volumes.items():
            self.arguments += ["-v", f"{source}:{target}"]
        for key, value in environment.items():
            self.arguments += ["-e", f"{key}={value}"]
        self.process: subprocess.Popen | None = None

    def start(self) -> "ImageProcess":
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [*self.arguments, self.container, "--", *self.command],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def run(self, timeout: float = 300) -> str:
        """Runs the command to its end; returns its output."""
        result = subprocess.run(
            [*self.arguments, self.container, "--", *self.command],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        self.log_path.write_text(result.stdout + result.stderr)
        assert result.returncode == 0, self.log()
        return result.stdout

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for(self, pattern: str, timeout: float) -> None:
        """Waits for a line of its log matching `pattern` (a started process must stay up)."""
        wait_for(
            lambda: re.search(pattern, self.log()),
            timeout=timeout,
            what=f"{self.name}: a log line matching {pattern!r}",
            interval=0.2,
            process=self.process,
            log=self.log,
        )

    def error_lines(self) -> list[str]:
        return [line for line in self.log().splitlines() if re.search(r"\bERROR\b", line)]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        subprocess.run(["buildah", "rm", self.container], capture_output=True)


def shared_directory(path: Path) -> Path:
    """A host directory the image's user can write (mounted into several containers)."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.chown(path, 10001, 10001)
    return path
