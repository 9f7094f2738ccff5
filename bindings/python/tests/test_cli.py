"""The `sets3lock` command the wheel installs (a console script calling the Rust entry point)
against the Rust binary itself: the same output, messages and exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import pytest
import sets3lock

from conftest import ROOT, S3

SCRIPT = Path(sys.executable).parent / "sets3lock"


def rust_binary() -> Path:
    """The Rust command: $SETS3LOCK_RUST_BIN, else target/release or target/debug."""
    given = os.environ.get("SETS3LOCK_RUST_BIN")
    candidates = [Path(given)] if given else [ROOT / "target/release/sets3lock", ROOT / "target/debug/sets3lock"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    message = f"no Rust sets3lock binary at {', '.join(map(str, candidates))} (cargo build -p sets3lock-cli)"
    if os.environ.get("SETS3LOCK_REQUIRE_S3") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def rust() -> Path:
    return rust_binary()


@pytest.fixture(scope="module")
def script() -> Path:
    assert SCRIPT.is_file(), f"the wheel installed no console script at {SCRIPT}"
    return SCRIPT


def run(binary: Path, args: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    # argv[0] is "sets3lock" for both, whatever their paths.
    try:
        return subprocess.run(
            ["sets3lock", *args], executable=str(binary), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{binary} {list(args)} did not finish in {timeout} s: {e.stderr!r}", pytrace=False)


def both(rust: Path, script: Path, args: Sequence[str]) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    return run(rust, args), run(script, args)


def test_version(rust: Path, script: Path) -> None:
    r, p = both(rust, script, ["--version"])
    assert (p.returncode, p.stdout, p.stderr) == (r.returncode, r.stdout, r.stderr)
    assert r.returncode == 0
    assert sets3lock.__version__ in p.stdout, (sets3lock.__version__, p.stdout)
    module = subprocess.run(
        [sys.executable, "-m", "sets3lock", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (module.returncode, module.stdout) == (0, r.stdout)


@pytest.mark.parametrize(
    "args",
    [
        ["--lease", "nonsense", "s3://b/k", "true"],
        ["--timeout", "soon", "s3://b/k", "true"],
        ["http://x/y", "true"],
        ["s3://b/k"],
        ["--no-such-flag", "s3://b/k", "true"],
    ],
    ids=["lease", "timeout", "url", "no-program", "flag"],
)
def test_usage_errors(rust: Path, script: Path, args: list[str]) -> None:
    r, p = both(rust, script, args)
    assert r.returncode == 100, f"the Rust binary exited {r.returncode}: {r.stderr}"
    assert (p.returncode, p.stderr, p.stdout) == (r.returncode, r.stderr, r.stdout)


@pytest.mark.parametrize("args", [[], ["status"], ["unlock", "s3://b/k"], ["completions", "bash"]])
def test_other_invocations_match(rust: Path, script: Path, args: list[str]) -> None:
    r, p = both(rust, script, args)
    assert (p.returncode, p.stderr, p.stdout) == (r.returncode, r.stderr, r.stdout)


def test_help(rust: Path, script: Path) -> None:
    r, p = both(rust, script, ["--help"])
    assert r.returncode == 0
    assert (p.returncode, p.stdout) == (r.returncode, r.stdout)


def test_run_mode(s3: S3, rust: Path, script: Path) -> None:
    program = ["sh", "-c", 'echo "ran $SETS3LOCK_URL ${SETS3LOCK_TOKEN:-none}"']
    for binary in (rust, script):
        url = s3.url("cli-run")
        done = run(binary, [url, *program])
        assert done.returncode == 0, f"{binary}: {done.stderr}"
        assert done.stdout == f"ran {url} none\n", f"{binary}: {done.stdout!r}"
        fenced = run(binary, ["--fenced", url + "-f", *program])
        assert fenced.stdout == f"ran {url}-f 1\n", f"{binary}: {fenced.stdout!r} {fenced.stderr}"
        again = run(binary, [url + "-f", *program])
        assert again.stdout == f"ran {url}-f 2\n", f"{binary}: {again.stdout!r} {again.stderr}"
        status = run(binary, [url, "sh", "-c", "exit 7"])
        assert status.returncode == 7, f"{binary}: {status.returncode} {status.stderr}"
        assert sets3lock.status(url) is None


def test_busy_and_status(s3: S3, rust: Path, script: Path) -> None:
    url = s3.url("cli-busy")
    with sets3lock.Lock(url) as held:
        r, p = both(rust, script, ["-n", url, "true"])
        assert r.returncode == 111, r.stderr
        assert p.returncode == 111, p.stderr
        assert str(os.getpid()) in r.stderr and str(os.getpid()) in p.stderr, (r.stderr, p.stderr)
        r, p = both(rust, script, ["-nx", url, "true"])
        assert (r.returncode, p.returncode) == (0, 0)
        r, p = both(rust, script, ["status", url])
        assert (r.returncode, p.returncode) == (1, 1), (r.stderr, p.stderr)
        # "URL: held by HOST pid N since ... (lease 60s, owner ...)" and how to unlock it.
        assert f"{url}: held by " in r.stdout and f"pid {os.getpid()} " in r.stdout, r.stdout
        assert p.stdout == r.stdout
        assert held.is_held()
    r, p = both(rust, script, ["status", url])
    assert (r.returncode, p.returncode) == (0, 0), (r.stderr, p.stderr)
    assert p.stdout == r.stdout


def _interrupt_a_wait(binary: Path, url: str) -> tuple[Optional[int], float, str]:
    proc = subprocess.Popen(
        ["sets3lock", url, "true"], executable=str(binary), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        time.sleep(1.5)
        assert proc.poll() is None, f"{binary} ended before the signal: {proc.communicate()}"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        return proc.returncode, time.monotonic() - sent, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigint_while_waiting(s3: S3, rust: Path, script: Path) -> None:
    url = s3.url("cli-sigint")
    with sets3lock.Lock(url) as held:
        r_code, r_took, r_err = _interrupt_a_wait(rust, url)
        p_code, p_took, p_err = _interrupt_a_wait(script, url)
        assert r_code == 128 + signal.SIGINT, r_err
        assert p_code == r_code, p_err
        assert p_took < 5, f"the console script took {p_took:.2f} s to stop"
        holder = sets3lock.status(url)
        assert holder is not None and holder.owner == held.owner and holder.etag == held.etag
    assert sets3lock.status(url) is None


@pytest.mark.parametrize(
    "bad",
    ["http://bucket/key", "s3://b/key", "s3://bucket-name", "s3://Bucket_Name/key", "ftp:/x"],
)
def test_a_bad_url_says_what_the_command_says(script: Path, bad: str) -> None:
    with pytest.raises(ValueError) as info:
        sets3lock.Lock(bad)
    said = str(info.value)
    done = run(script, ["status", bad])
    assert done.returncode == 100, done
    # The command's one line quotes the library's message about the URL, word for word.
    assert said and said in done.stderr, f"Python: {said!r}\ncommand: {done.stderr!r}"


def test_a_bad_duration_says_what_the_command_says(script: Path) -> None:
    with pytest.raises(ValueError) as info:
        sets3lock.Lock("s3://bucket-name/key", lease="soon")
    done = run(script, ["--lease", "soon", "s3://bucket-name/key", "true"])
    assert done.returncode == 100, done
    assert str(info.value) in done.stderr, f"Python: {info.value}\ncommand: {done.stderr!r}"
