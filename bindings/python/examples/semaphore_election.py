"""A semaphore (at most two at once) and a leader election, in one short program.

    python semaphore_election.py s3://my-bucket/demo
"""

from __future__ import annotations

import socket
import sys
import threading

import sets3lock


# One line at a time: print() from several threads can interleave a line and its newline.
_output = threading.Lock()


def with_a_slot(url: str, name: str, slots: list[int]) -> None:
    with sets3lock.Semaphore(url, 2, timeout="30s", poll_max="250ms") as held:
        assert held.slot is not None
        slots.append(held.slot)
        with _output:
            print(f"{name} runs in slot {held.slot}", flush=True)


def elect(url: str) -> None:
    me = f"{socket.gethostname()}:8080"
    election = sets3lock.Election(url, me, lease="15s")
    current = election.leader()
    print("no leader yet" if current is None else f"leader now: {current.value}")
    with election.campaign() as leading:
        leader = election.leader()
        assert leader is not None
        print(f"elected: {leader.value} (token {leading.token})")
    print("stepped down")


def main(prefix: str) -> None:
    base = prefix.rstrip("/")
    slots: list[int] = []
    threads = [
        threading.Thread(target=with_a_slot, args=(f"{base}/deploys", f"deploy-{i}", slots))
        for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"slots used: {sorted(set(slots))}")
    elect(f"{base}/leader")


if __name__ == "__main__":
    main(sys.argv[1])
