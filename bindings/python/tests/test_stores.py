"""The other stores through their URLs: one acquire / busy / release round on Azurite
(az://CONTAINER/key) and on fake-gcs-server (gs://BUCKET/key). Skipped when a server's
variables are missing, failed instead under SETS3LOCK_REQUIRE_S3=1."""

from __future__ import annotations

import os
import uuid
from typing import Optional

import pytest
import sets3lock

from conftest import is_free, server_vars


def round_trip(url: str, *, fenced: bool, endpoint: Optional[str] = None) -> None:
    with sets3lock.Lock(url, fenced=fenced, wait=False, endpoint=endpoint) as held:
        assert held.url == url
        if fenced:
            assert held.token == 1
        holder = sets3lock.status(url, endpoint=endpoint)
        assert holder is not None and holder.owner == held.owner and holder.pid == os.getpid()
        with pytest.raises(sets3lock.Busy) as info:
            sets3lock.Lock(url, fenced=fenced, wait=False, endpoint=endpoint).acquire()
        busy = info.value.holder
        assert busy is not None and busy.owner == held.owner, str(busy)
        assert info.value.etag == held.etag
    assert not held.is_held()
    assert is_free(sets3lock.status(url, endpoint=endpoint))
    # Taken again at once after the release.
    again = sets3lock.Lock(url, fenced=fenced, wait=False, endpoint=endpoint).acquire()
    if fenced:
        assert again.token == 2
    assert again.release() == ("freed" if fenced else "deleted")
    assert is_free(sets3lock.status(url, endpoint=endpoint))


def _clear_store_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("AZURE_STORAGE_", "GOOGLE_")) or name in ("STORAGE_EMULATOR_HOST", "GCE_METADATA_HOST"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("fenced", [False, True], ids=["presence", "fenced"])
def test_azurite_connection_string(monkeypatch: pytest.MonkeyPatch, fenced: bool) -> None:
    v = server_vars("azurite", "SETS3LOCK_AZURITE", ["CONTAINER", "CONNECTION_STRING"])
    _clear_store_env(monkeypatch)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", v["CONNECTION_STRING"])
    round_trip(f"az://{v['CONTAINER']}/pytest/{uuid.uuid4().hex}", fenced=fenced)


def test_azurite_account_key_and_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    v = server_vars("azurite", "SETS3LOCK_AZURITE", ["ENDPOINT", "ACCOUNT", "KEY", "CONTAINER"])
    _clear_store_env(monkeypatch)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT", v["ACCOUNT"])
    monkeypatch.setenv("AZURE_STORAGE_KEY", v["KEY"])
    round_trip(f"az://{v['CONTAINER']}/pytest/{uuid.uuid4().hex}", fenced=False, endpoint=v["ENDPOINT"])


def test_fake_gcs(monkeypatch: pytest.MonkeyPatch) -> None:
    v = server_vars("fake-gcs", "SETS3LOCK_FAKEGCS", ["ENDPOINT", "BUCKET"])
    _clear_store_env(monkeypatch)
    # The emulator's variable: its endpoint, and no credentials. fake-gcs-server 1.54.0 does
    # not honour a conditional delete, so only fenced locks are safe there (as in cli/tests/command/stores.rs).
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", v["ENDPOINT"])
    round_trip(f"gs://{v['BUCKET']}/pytest/{uuid.uuid4().hex}", fenced=True)


def test_fake_gcs_refuses_presence_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    v = server_vars("fake-gcs", "SETS3LOCK_FAKEGCS", ["ENDPOINT", "BUCKET"])
    _clear_store_env(monkeypatch)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", v["ENDPOINT"])
    url = f"gs://{v['BUCKET']}/pytest/{uuid.uuid4().hex}"
    # The store check finds the ignored delete precondition: a plain lock is refused,
    # naming fenced mode as the fix.
    with pytest.raises(sets3lock.StoreRefused) as info:
        sets3lock.Lock(url, wait=False, store_check="once").acquire()
    text = str(info.value)
    assert "\n" not in text and "fenced" in text, text
    assert is_free(sets3lock.status(url))


def test_seaweedfs_is_there_when_required() -> None:
    # Under SETS3LOCK_REQUIRE_S3=1 a missing SeaweedFS fails here even if every S3 test
    # were deselected; otherwise it is a skip like the others.
    server_vars("seaweedfs", "SETS3LOCK_SEAWEEDFS", ["ENDPOINT", "ACCESS_KEY", "SECRET", "BUCKET"])
