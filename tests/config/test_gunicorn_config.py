"""The image's gunicorn settings live in config/gunicorn.conf.py, which the image links where
gunicorn looks by default (its working directory, /app): any gunicorn command run there, an
operator's own included, gets them; a setting on the command line still wins
(docs/decisions/hardening.md, "Hardening IV", 10)."""

import stat
import subprocess
import sys

import pytest

from tests.servers import answers, free_port, stop_process, wait_for
from tests.settings_helpers import ROOT, production_environment

CONFIG = ROOT / "config" / "gunicorn.conf.py"


def dockerfile_lines() -> list[str]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip()[:1] not in ("", "#")]


def test_the_image_links_the_config_file_into_its_working_directory():
    lines = dockerfile_lines()

    assert "WORKDIR /app" in lines
    assert "RUN ln -s config/gunicorn.conf.py /app/gunicorn.conf.py" in lines
    assert lines[-1] == 'CMD ["gunicorn", "config.wsgi"]'


@pytest.fixture
def image_like(tmp_path):
    """A working directory holding the link as the image's /app does, a writable var
    directory, and a $HOME where nothing can be created (the image's /app is read-only to the
    processes; as root, a file in its place does that)."""
    cwd, var = tmp_path / "app", tmp_path / "var"
    cwd.mkdir()
    var.mkdir()
    (cwd / "gunicorn.conf.py").symlink_to(CONFIG)
    home = tmp_path / "home"
    home.write_text("not a directory")
    environment = production_environment(
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="false",
        STOREFRONT_VAR_DIR=str(var),
        HOME=str(home),
        PYTHONPATH=str(ROOT),
        XDG_RUNTIME_DIR=None,
    )
    return cwd, var, environment


def test_any_gunicorn_command_gets_the_images_settings(image_like):
    cwd, var, environment = image_like

    result = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--print-config", "config.wsgi"],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    values = dict(
        (name.strip(), value.strip())
        for name, _, value in (line.partition("=") for line in result.stdout.splitlines())
    )
    assert values["control_socket"] == str(var / "gunicorn.ctl")
    assert values["worker_tmp_dir"] == "/dev/shm"
    assert values["bind"] == "['0.0.0.0:8000']"
    # threads: a request waiting on another server holds a thread, not the process
    assert (values["worker_class"], values["threads"]) == ("gthread", "8")


def test_an_operators_own_command_line_starts_without_an_error_line(image_like, tmp_path):
    # given: the image's working directory, and a command line of the operator's own
    cwd, var, environment = image_like
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    command = ["config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "20"]
    # when it starts
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", *command],
            cwd=cwd,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(
            lambda: answers(f"http://127.0.0.1:{port}/healthz", headers={"Host": "127.0.0.1"}),
            timeout=60,
            what="gunicorn answering /healthz",
            process=process,
            log=lambda: log_path.read_text(errors="replace")[-3000:],
        )
        # then: its bind applies, and so does the file's control socket, in the writable dir
        socket = var / "gunicorn.ctl"
        wait_for(socket.exists, timeout=10, what="the control socket")
        assert stat.S_ISSOCK(socket.stat().st_mode)
    finally:
        stop_process(process)
    assert [line for line in log_path.read_text().splitlines() if "[ERROR]" in line] == []
