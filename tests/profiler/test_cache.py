"""The profile cache: round trips, keys, concurrent writers, killed writers, bad entries."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest
from tests.profiler.helpers import key, measurement

from autotm_core.errors import ResourceError
from autotm_core.formats.document import read_document
from autotm_core.profiler.cache import KIND, VERSION, ProfileCache

ROOT = Path(__file__).resolve().parents[2]


def _writer(directory: Path, keys: int, rounds: int, tag: str, samples: int
            ) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.profiler.writer", str(directory), str(keys), str(rounds),
         tag, str(samples)], cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_round_trip_and_distinct_keys(tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path)
    assert cache.get(key(0)) is None
    cache.put(key(0), measurement(0.5), samples_seconds=[0.4, 0.5, 0.6])
    assert cache.get(key(0)) == measurement(0.5)
    assert cache.get(key(1)) is None
    assert len(cache.entries()) == 1
    assert cache.get(key(0), min_repeat=4) is None  # fewer repetitions than asked for


def test_key_depends_on_placement_and_machine() -> None:
    base = key(0)
    assert attrs.evolve(base, nodes=(0, 1)).digest != base.digest
    assert attrs.evolve(base, workspace_node=1).digest != base.digest
    other = attrs.evolve(base.context, threads=base.context.threads + 1)
    assert attrs.evolve(base, context=other).digest != base.digest
    assert key(0).digest == base.digest


def test_digest_is_the_same_in_another_process() -> None:
    here = key(3).digest
    there = subprocess.run(
        [sys.executable, "-c", "from tests.profiler.helpers import key; print(key(3).digest)"],
        cwd=ROOT, text=True, capture_output=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "123"},
    ).stdout.strip()
    assert there == here


def test_two_concurrent_writers_leave_only_whole_entries(tmp_path: Path) -> None:
    # both write keys 0..5 (the same keys) and their own values; then each writes 6..7 alone
    a, b = _writer(tmp_path, 6, 4, "a", 500), _writer(tmp_path, 6, 4, "b", 500)
    cache = ProfileCache(tmp_path)
    reads = 0
    while a.poll() is None or b.poll() is None:  # read while they write: never a partial entry
        for i in range(6):
            found = cache.get(key(i))
            if found is not None:
                assert int(found.median_seconds) in (1, 2)
                reads += 1
        time.sleep(0.002)  # leave the two cores to the writers
    assert a.wait() == 0 and b.wait() == 0, a.stderr.read() + b.stderr.read()
    assert reads > 0
    values = [cache.get(key(i)) for i in range(6)]
    assert all(v is not None and int(v.median_seconds) in (1, 2) for v in values)
    assert len(cache.entries()) == 6
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]  # no temporary file left


def test_a_killed_writer_leaves_no_corrupt_entry(tmp_path: Path) -> None:
    writer = _writer(tmp_path, 50, 1000, "a", 20_000)
    assert writer.stdout.readline().strip() == "started"
    time.sleep(0.3)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    cache = ProfileCache(tmp_path)
    entries = cache.entries()
    assert entries
    for path in entries:  # every entry file is a whole document
        doc, _ = read_document(path, KIND, {VERSION})
        assert doc["measurement"]["repeat"] == 3
    for i in range(50):
        found = cache.get(key(i))
        assert found is None or int(found.median_seconds) == 1


def test_an_unreadable_entry_is_a_miss_then_overwritten(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    cache = ProfileCache(tmp_path)
    cache.put(key(0), measurement(0.5))
    cache.path(key(0)).write_text('{"format": "autotm-core/profile-entry", "version": 1, "ke')
    assert cache.get(key(0)) is None
    assert "unreadable cache entry" in caplog.text
    cache.put(key(0), measurement(0.25))
    assert cache.get(key(0)) == measurement(0.25)


def test_an_entry_holding_another_key_is_ignored(tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path)
    cache.put(key(1), measurement(0.5))
    os.replace(cache.path(key(1)), cache.path(key(0)))
    assert cache.get(key(0)) is None


def test_a_file_is_not_a_cache_folder(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ResourceError, match="is a file, not a folder"):
        ProfileCache(tmp_path / "file")
