"""Issue 17 (3): the document index on object storage — moto's S3 server on loopback, real processes.

The server is started by ``tests/servers_s3.py``; LanceDB and the writer lock talk S3 to it. Writers
in other processes use the hash embedder (fast); the CLI test runs the bundled ONNX model.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.providers.documents import (
    CollectionBusy,
    DocumentIndex,
    DocumentStore,
    IndexLocation,
    count_duplicates,
    index_backend_status,
)
from simone.providers.documents._object_lock import ObjectStoreLock, S3Objects, sign_v4
from simone.providers.testing import HashEmbedder
from simone.runtime import ConfigError, EmbeddingChain, IndexSettings, Settings

from tests.servers_s3 import S3Index


def _index(s3: S3Index, **settings: Any) -> DocumentIndex:
    store = DocumentStore(s3.uri, s3.storage_options)
    return DocumentIndex(store, EmbeddingChain([HashEmbedder(32)]), settings=IndexSettings(**settings))


# -- settings ------------------------------------------------------------------------------------------


def test_credentials_are_refused_in_the_settings_and_never_shown() -> None:
    with pytest.raises(ConfigError, match="must not hold credentials"):
        IndexLocation.of("s3://b/p", {"aws_secret_access_key": "x"})
    with pytest.raises(ConfigError, match="no credentials or query"):
        IndexLocation.of("s3://key:secret@b/p")
    with pytest.raises(ConfigError, match="local folder or s3://"):
        IndexLocation.of("gs://b/p")
    shown = IndexLocation.of("s3://b/p/", {"endpoint": "http://127.0.0.1:9"}).describe()
    assert shown["uri"] == "s3://b/p" and shown["backend"] == "s3" and "secret" not in json.dumps(shown)
    # an endpoint or a refused URI is shown bare: no user part (an access key), no query (a signature)
    endpoint = "http://AKID:s3cret@MinIO:9000/?X-Amz-Signature=s3cret"
    assert IndexLocation.of("s3://b/p", {"endpoint": endpoint}).describe()["endpoint"] == "http://minio:9000/"
    with pytest.raises(ConfigError) as refused:
        IndexLocation.of("gs://AKID:s3cret@b/p?sig=s3cret")
    assert "'gs://b/p'" in str(refused.value) and "s3cret" not in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        IndexLocation.of("s3://b/p?X-Amz-Signature=s3cret")
    assert "'s3://b/p'" in str(refused.value) and "s3cret" not in str(refused.value)


def test_the_signature_is_aws_signature_v4_as_botocore_computes_it() -> None:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = "http://127.0.0.1:9000/bucket/index/documents.lock"
    body = b'{"owner": "x"}'
    request = AWSRequest(method="PUT", url=url, data=body, headers={"If-None-Match": "*"})
    S3SigV4Auth(Credentials("AKID", "SECRET", "TOKEN"), "s3", "eu-west-1").add_auth(request)
    when = dt.datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
    ours = sign_v4(
        "PUT", url, {"If-None-Match": "*"}, body, region="eu-west-1", access_key="AKID",
        secret_key="SECRET", session_token="TOKEN", when=when,
    )  # fmt: skip
    theirs = request.headers["Authorization"]
    assert ours["authorization"].split("Signature=")[1] == theirs.split("Signature=")[1], (ours, theirs)


# -- the CLI against S3 ----------------------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from simone.agents.cli import main

    code = main(list(argv))
    return code, capsys.readouterr().out


def test_index_search_ask_and_doctor_work_unchanged_on_s3(
    s3_index: S3Index,
    tmp_path: Path,
    tree: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in s3_index.env().items():
        monkeypatch.setenv(key, value)
    data = str(tmp_path / "data")
    code, out = _run(capsys, "--data-dir", data, "index", str(tree), "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["files_indexed"] == 4 and report["pending_left"] == 0
    assert not (tmp_path / "data" / "index").exists(), "the tables are in the bucket, not in data_dir"
    assert (tmp_path / "data" / "embedding-cache.sqlite3").exists(), "the embedding cache stays local"

    code, out = _run(capsys, "--data-dir", data, "search", "quarterly report due", "--json")
    assert code == 0, out
    assert "notes.txt" in out

    code, out = _run(capsys, "--data-dir", data, "ask", "When is the quarterly report due?", "--json")
    assert code == 0, out
    assert "Friday" in out

    code, out = _run(capsys, "--data-dir", data, "doctor", "--json")
    assert code == 0, out
    doctor = json.loads(out)
    assert doctor["index"] == s3_index.uri
    (collection,) = doctor["collections"]
    assert collection["files"] == 4 and collection["duplicates"] == 0
    assert "simone-test-secret" not in out

    status = anyio.run(index_backend_status, Settings(data_dir=tmp_path / "data"))
    assert status["backend"] == "s3" and status["uri"] == s3_index.uri and status["answers"] is True
    assert status["endpoint"] == s3_index.server.endpoint and status["collections"] == 1


def test_the_backend_status_reports_a_server_that_does_not_answer(
    s3_index: S3Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMONE_INDEX__URI", s3_index.uri)
    monkeypatch.setenv(
        "SIMONE_INDEX__STORAGE_OPTIONS", json.dumps({"endpoint": "http://127.0.0.1:9", "region": "us-east-1"})
    )
    status = anyio.run(lambda: index_backend_status(Settings(data_dir=tmp_path), timeout_s=5))
    assert status["backend"] == "s3" and status["answers"] is False and status["error"]


# -- one writer per collection, across processes ------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import json, sys, time, anyio
    from pathlib import Path
    from simone.providers.documents import CollectionBusy, DocumentIndex, DocumentStore
    from simone.providers.testing import HashEmbedder
    from simone.runtime import EmbeddingChain, IndexSettings

    async def main(root, uri, options, go_file, start_at):
        index = DocumentIndex(
            DocumentStore(uri, json.loads(options)), EmbeddingChain([HashEmbedder(32)]),
            settings=IndexSettings(write_batch_chunks=4),
        )
        def progress(report):
            if go_file != "-":
                print("started", flush=True)
                while not Path(go_file).exists():  # hold the run (and the lock) until told
                    time.sleep(0.05)
        async with index:
            while time.time() < float(start_at):  # both processes start writing at one instant
                time.sleep(0.001)
            try:
                report = await index.index_paths([root], progress=progress)
            except CollectionBusy as exc:
                print("busy", exc.message, flush=True)
                sys.exit(3)
        print("finished", report.files_indexed, report.chunks, flush=True)

    anyio.run(main, *sys.argv[1:6])
    """
)


def _worker(
    tmp_path: Path, tree: Path, s3: S3Index, go_file: str, start_at: float = 0.0
) -> subprocess.Popen[str]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    argv = [str(tree), s3.uri, json.dumps(s3.storage_options), go_file, str(start_at)]
    return subprocess.Popen(
        [sys.executable, str(script), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


async def _rows_and_duplicates(s3: S3Index) -> tuple[int, int]:
    async with _index(s3) as index:
        assert index.collection is not None
        return await index.collection.count(), await count_duplicates(index.collection)


def test_a_second_indexer_on_s3_is_refused_while_the_first_holds_the_lock(
    s3_index: S3Index, tmp_path: Path, tree: Path
) -> None:
    go_file = tmp_path / "go"
    first = _worker(tmp_path, tree, s3_index, str(go_file))
    try:
        assert first.stdout is not None
        line = first.stdout.readline()
        assert line.startswith("started"), (line, first.stderr.read() if first.stderr else "")
        second = _worker(tmp_path, tree, s3_index, "-")
        out, err = second.communicate(timeout=120)
        assert second.returncode == 3, (out, err)
        assert "being written by another process" in out and f"pid {first.pid}" in out
        go_file.touch()
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0 and "finished 4" in out, (out, err)
    finally:
        first.kill()
    rows, duplicates = anyio.run(_rows_and_duplicates, s3_index)
    assert rows > 0 and duplicates == 0
    # The lock object is gone: the next writer goes straight in.
    third = _worker(tmp_path, tree, s3_index, "-")
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0 and "finished 0" in out, (out, err)


def test_two_indexers_started_at_the_same_instant_never_store_a_chunk_twice(
    s3_index: S3Index, tmp_path: Path, tree: Path
) -> None:
    """Without the lock, LanceDB on S3 commits both upserts and every chunk is stored twice."""
    start_at = time.time() + 6  # both have connected by then
    workers = [_worker(tmp_path, tree, s3_index, "-", start_at) for _ in range(2)]
    results = [(w.wait(180), *w.communicate()) for w in workers]
    codes = sorted(code for code, _, _ in results)
    print("two simultaneous indexers:", [out.strip() for _, out, _ in results])  # the outcome (-s)
    finished = [out for code, out, _ in results if code == 0]
    assert codes in ([0, 0], [0, 3]), results
    assert any("finished 4" in out for out in finished), results  # one did the work
    if codes == [0, 3]:
        assert any("being written by another process" in out for _, out, _ in results)
    rows, duplicates = anyio.run(_rows_and_duplicates, s3_index)
    assert duplicates == 0
    chunks = int(next(out for out in finished if "finished 4" in out).split()[2])
    assert rows == chunks


def test_a_reader_in_another_process_sees_the_rows_a_writer_commits(
    s3_index: S3Index, tmp_path: Path, tree: Path
) -> None:
    async def go() -> None:
        async with _index(s3_index) as reader:
            await reader.index_paths([tree])  # the collection exists; this process now only reads
            assert reader.collection is not None
            before = await reader.collection.count()
            (tree / "late.md").write_text("# Late\n\nThe ostrich budget was approved yesterday.\n")
            writer = _worker(tmp_path, tree, s3_index, "-")
            out, err = await anyio.to_thread.run_sync(writer.communicate, None, 120)
            assert writer.returncode == 0 and "finished 1" in out, (out, err)
            for _ in range(75):  # the handle re-reads the manifest every READ_CONSISTENCY (2 s)
                if await reader.collection.count() > before:
                    break
                await anyio.sleep(0.2)
            assert await reader.collection.count() > before
            hits = await reader.collection.search_terms(" ".join(reader.analyzer.terms("ostrich")), "", 5)
            assert hits, "the other process's rows are searchable here"

    anyio.run(go)


# -- the lease --------------------------------------------------------------------------------------------


def test_an_expired_lock_is_taken_over_and_its_late_holder_stops(s3_index: S3Index) -> None:
    location = IndexLocation.of(s3_index.uri, s3_index.storage_options)

    async def go() -> None:
        crashed = ObjectStoreLock(location, "documents", lease_s=5)
        crashed.lease_s = -1  # as if written long ago by a writer that crashed
        await crashed.acquire()
        stale_etag = crashed.etag
        crashed.lease_s = 5

        fresh = ObjectStoreLock(location, "documents", lease_s=5)
        await fresh.acquire()  # the stale lock is removed and taken
        assert fresh.etag != stale_etag

        with pytest.raises(CollectionBusy, match="lease until"):
            await ObjectStoreLock(location, "documents", lease_s=5).acquire()
        with pytest.raises(CollectionBusy, match="lost its lock"):
            await crashed.renew()  # the late holder finds out at its next renewal
        await crashed.release()  # no effect on the new holder's lock
        assert (await S3Objects(location).request("GET", "documents.lock")).status_code == 200
        await fresh.renew()
        await fresh.release()
        assert (await S3Objects(location).request("GET", "documents.lock")).status_code == 404

        # A failing write comes out as itself, and the lock is released behind it.
        with pytest.raises(ValueError, match="the body failed"):
            async with ObjectStoreLock(location, "documents", lease_s=5).hold():
                raise ValueError("the body failed")
        assert (await S3Objects(location).request("GET", "documents.lock")).status_code == 404

    anyio.run(go)
