"""The compiled-system cache (compiler.lang.syscache): a hit gives the System a compile gives,
a change of any input misses, and a file that is not an entry (damaged, foreign, a link, a
FIFO, a pickle naming another callable) is ignored with a note, never trusted, never a
traceback."""

from __future__ import annotations

import os
import re
import pickle
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from topoc.backends import json_system, summary
from topoc.compiler.lang import elaborate as elaborate_module
from topoc.compiler.lang import pipeline, syscache

ROOT = Path(__file__).resolve().parents[3]
RACK = ROOT / "library/nvidia/gb200_nvl72.topo"
CLUSTER = ROOT / "library/nvidia/nvl72_fourtier.topo"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    """A cache folder of this test, every system stored (not only the large ones)."""
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(syscache, "MIN_LINKS", 0)


def _entries() -> list[Path]:
    return sorted(syscache.folder().glob("*.system")) if syscache.folder().exists() else []


def _no_elaboration(monkeypatch):
    """Make elaboration fail, so a load that succeeds must have come from the cache."""
    def refuse(*_a, **_k):
        raise AssertionError("elaborated")
    monkeypatch.setattr(pipeline, "elaborate", refuse)


def _same(a, b):
    assert a.devices == b.devices and tuple(a.links) == tuple(b.links)
    assert (a.name, a.params, a.parallels, a.sites, a.hosts, a.models) == \
        (b.name, b.params, b.parallels, b.sites, b.hosts, b.models)
    assert [n.render() for n in a.notes] == [n.render() for n in b.notes]
    assert json_system.render(a) == json_system.render(b)
    assert summary.render(a) == summary.render(b)


def _systems():
    return sorted(p for p in (ROOT / "library").rglob("*.topo")
                  if re.search(r"^system ", p.read_text(), re.M))


@pytest.mark.parametrize("path", _systems(), ids=lambda p: p.name)
def test_a_hit_is_the_system_a_compile_gives(path, monkeypatch):
    fresh = pipeline.load(path)
    notes: list[str] = []
    first = pipeline.load(path, cache=True, notes=notes)
    assert len(_entries()) == 1 and notes == []
    _no_elaboration(monkeypatch)
    hit = pipeline.load(path, cache=True, notes=notes)
    assert notes == []
    _same(fresh, hit)
    _same(first, hit)
    # the sources of the spans are shared as in a compile (lint compares them by identity)
    if hit.links and hit.span is not None:
        roots = {id(lk.span.source) for lk in hit.links if lk.span is not None
                 and lk.span.path == hit.span.path}
        assert roots <= {id(hit.span.source)}


def test_a_hit_keeps_the_compact_links_and_their_arrays(monkeypatch):
    from topoc.compiler.ir.links import Links
    pipeline.load(CLUSTER, {"racks": 2}, cache=True)
    _no_elaboration(monkeypatch)
    hit = pipeline.load(CLUSTER, {"racks": 2}, cache=True)
    assert isinstance(hit.links, Links) and "ends" in hit.memo and "verify" in hit.memo
    assert not hit.links._made and hit.links._all is None


def test_a_hit_carries_the_levels_and_each_devices_model_number(monkeypatch):
    """What lint and the cost model would compute again comes back with a hit: each device's
    distance from the NICs (stored) and its model's number (from the device columns), equal
    to a fresh compile's."""
    import numpy as np

    from topoc.compiler.ir import summary as summary_ir
    fresh = pipeline.load(CLUSTER, {"racks": 2})
    pipeline.load(CLUSTER, {"racks": 2}, cache=True)
    _no_elaboration(monkeypatch)
    hit = pipeline.load(CLUSTER, {"racks": 2}, cache=True)
    assert "level_array" in hit.memo and "model_numbers" in hit.memo
    assert np.array_equal(hit.memo["level_array"], summary_ir._level_array(fresh))
    assert (hit.memo["level_array"] >= 0).any()
    numbers, models = hit.memo["model_numbers"]
    assert [models[k] for k in numbers.tolist()] == [d.model for d in hit.devices]
    ids, by_id = hit.memo["model_ids"]
    assert ids.tolist() == [id(d.model) for d in hit.devices]
    assert list(by_id) == sorted(by_id) and all(by_id[k] is m for k, m in zip(ids.tolist(), (
        d.model for d in hit.devices)))
    assert hit.gpus == fresh.gpus


PARTS = """
link fast : nvlink { bandwidth = 50 GB/s  latency = 1 us }
device G : gpu { hbm = 80 GB }
group N {
  gpu[4] : G
  gpu[0] <-> gpu[1] : fast
  gpu[2] <-> gpu[3] : fast
}
"""


def test_any_input_changed_misses(tmp_path, monkeypatch):
    lib = tmp_path / "parts.topo"
    lib.write_text(PARTS)
    main = tmp_path / "main.topo"
    main.write_text('use "parts.topo"\nsystem s : N\n')
    pipeline.load(main, cache=True)
    assert len(_entries()) == 1
    pipeline.load(main, cache=True)
    assert len(_entries()) == 1
    lib.write_text(PARTS + "\n# a comment changes the key\n")
    pipeline.load(main, cache=True)                         # the used file changed
    assert len(_entries()) == 2
    pipeline.load(CLUSTER, {"racks": 2}, cache=True)
    pipeline.load(CLUSTER, {"racks": 3}, cache=True)         # a parameter changed
    assert len(_entries()) == 4
    monkeypatch.setattr(syscache, "code_hash", lambda: "other code")
    pipeline.load(CLUSTER, {"racks": 3}, cache=True)         # the code changed
    assert len(_entries()) == 5


def _stored() -> Path:
    pipeline.load(RACK, cache=True)
    (entry,) = _entries()
    return entry


def _recompiled_with_note(monkeypatch, why: str):
    notes: list[str] = []
    system = pipeline.load(RACK, cache=True, notes=notes)
    assert len(notes) == 1 and "ignored and rewritten" in notes[0] and why in notes[0], notes
    assert system.name and len(system.gpus) == 72
    # and the entry is whole again
    again: list[str] = []
    _no_elaboration(monkeypatch)
    assert pipeline.load(RACK, cache=True, notes=again).devices == system.devices
    assert again == []


@pytest.mark.parametrize("damage, why", [
    (lambda b: b[:len(b) // 2], "size does not match"),
    (lambda b: b[:-10] + bytes(x ^ 0xFF for x in b[-10:]), "checksum"),
    (lambda b: b"not a cache at all\n", "not a system cache entry"),
    (lambda b: b"", "not a system cache entry"),
    (lambda b: b.replace(f" {syscache.FORMAT} ".encode(), b" 99 ", 1),
     "other input or by other code"),
])
def test_a_damaged_entry_is_ignored_with_a_note(damage, why, monkeypatch):
    entry = _stored()
    entry.write_bytes(damage(entry.read_bytes()))
    _recompiled_with_note(monkeypatch, why)


def test_a_foreign_entry_is_ignored_with_a_note(monkeypatch):
    pipeline.load(CLUSTER, {"racks": 2}, cache=True)
    (other,) = _entries()
    entry = syscache.path_of(syscache.key(pipeline.front_end(RACK.read_text(), RACK).sources,
                                          None))
    entry.write_bytes(other.read_bytes())
    _recompiled_with_note(monkeypatch, "other input")


def test_an_entry_naming_another_callable_is_never_unpickled(tmp_path, monkeypatch):
    entry = _stored()
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    payload = pickle.dumps(Evil(), protocol=5)
    key = entry.stem
    entry.write_bytes(syscache._header(key, len(payload), zlib.crc32(payload)) + payload)
    _recompiled_with_note(monkeypatch, "system")
    assert not marker.exists()


def test_a_symbolic_link_in_place_of_an_entry_is_not_followed(tmp_path, monkeypatch):
    entry = _stored()
    target = tmp_path / "elsewhere.bin"
    target.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(target)
    _recompiled_with_note(monkeypatch, "symbolic link")
    assert not entry.is_symlink()                   # replaced by a whole entry ...
    assert target.read_bytes()[:18] == b"topoc-system-cache"   # ... the target untouched


def test_a_fifo_in_place_of_an_entry_is_not_read(monkeypatch):
    entry = _stored()
    entry.unlink()
    os.mkfifo(entry)
    _recompiled_with_note(monkeypatch, "not a regular file")


def test_an_unwritable_cache_costs_nothing_but_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TOPOC_CACHE", str(blocker))          # a file, not a folder
    notes: list[str] = []
    assert len(pipeline.load(RACK, cache=True, notes=notes).gpus) == 72
    assert notes == [] and not list(tmp_path.glob("**/*.tmp"))


def test_only_the_newest_entries_are_kept(monkeypatch):
    monkeypatch.setattr(syscache, "KEEP_ENTRIES", 2)
    for racks in (1, 2, 3):
        pipeline.load(CLUSTER, {"racks": racks}, cache=True)
    assert len(_entries()) == 2
    _no_elaboration(monkeypatch)
    pipeline.load(CLUSTER, {"racks": 3}, cache=True)         # the last one is kept


def test_small_systems_are_not_stored(monkeypatch):
    monkeypatch.setattr(syscache, "MIN_LINKS", 10**9)
    pipeline.load(RACK, cache=True)
    assert _entries() == []


def _cli(*argv, env):
    return subprocess.run([sys.executable, "-m", "topoc", *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT)


def test_the_ci_recipe_compiles_once_and_writes_what_it_wrote_without_the_cache(tmp_path):
    """compile, lint and cost in a row through the CLI (the cache's threshold lowered by the
    environment of this test): the first stores the system, the others read it, and every
    output is the one --no-cache gives."""
    env = dict(os.environ, TOPOC_CACHE=str(tmp_path / "c"), TOPOC_SYSTEM_CACHE_MIN_LINKS="0")
    f = str(CLUSTER)
    runs = [["compile", f, "-D", "racks=2"], ["lint", f, "-D", "racks=2"],
            ["cost", f, "-D", "racks=2", "--group", "world", "--sizes", "1G"],
            ["compile", f, "-D", "racks=2", "--format", "json"]]
    cached = [_cli(*argv, env=env) for argv in runs]
    assert len(list((tmp_path / "c" / "systems").glob("*.system"))) == 1
    plain = [_cli(*argv, "--no-cache", env=dict(env, TOPOC_CACHE=str(tmp_path / "d")))
             for argv in runs]
    assert not (tmp_path / "d" / "systems").exists()
    for a, b in zip(cached, plain):
        assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


def test_two_writers_of_one_entry_leave_one_whole_entry(tmp_path):
    env = dict(os.environ, TOPOC_CACHE=str(tmp_path / "c"), TOPOC_SYSTEM_CACHE_MIN_LINKS="0")
    argv = [sys.executable, "-m", "topoc", "compile", str(CLUSTER), "-D", "racks=4"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, cwd=ROOT)
             for _ in range(3)]
    outs = {p.communicate()[0] for p in procs}
    assert len(outs) == 1 and all(p.returncode == 0 for p in procs)
    folder = tmp_path / "c" / "systems"
    assert len(list(folder.glob("*.system"))) == 1 and not list(folder.glob(".*"))
    again = _cli("compile", str(CLUSTER), "-D", "racks=4", env=env)
    assert again.stdout.encode() in outs and "ignored" not in again.stderr


def test_the_python_api_reads_the_cache_when_asked(monkeypatch):
    import topoc
    first = topoc.load(CLUSTER, {"racks": 2}, cache=True)
    found = topoc.lint(CLUSTER, defines={"racks": 2}, cache=True)
    _no_elaboration(monkeypatch)
    _same(first, topoc.load(CLUSTER, {"racks": 2}, cache=True))
    assert [d.render() for d in topoc.lint(CLUSTER, defines={"racks": 2}, cache=True)] == \
        [d.render() for d in found]
    with pytest.raises(AssertionError, match="elaborated"):
        topoc.load(CLUSTER, {"racks": 2})                     # no cache unless asked


def test_diff_reads_the_cache_and_stores_only_its_design(tmp_path):
    """``topoc diff A B`` stores A (the design, read again at every check) and reads B from
    the cache without storing it (what was found: new at each check); its output is the one
    --no-cache gives, with or without entries to read."""
    env = dict(os.environ, TOPOC_CACHE=str(tmp_path / "c"), TOPOC_SYSTEM_CACHE_MIN_LINKS="0")
    found = tmp_path / "found.topo"
    found.write_text(f'use "{CLUSTER}"\nsystem cluster : NVL72FourTier(racks = 2)\n')
    argv = ["diff", str(CLUSTER), str(found), "-D", "racks=2"]
    first = _cli(*argv, env=env)
    folder = tmp_path / "c" / "systems"
    assert len(list(folder.glob("*.system"))) == 1
    assert _cli("compile", str(CLUSTER), "-D", "racks=2", env=env).returncode == 0
    assert len(list(folder.glob("*.system"))) == 1         # the entry diff stored is A's
    _cli("compile", str(found), env=env)
    assert len(list(folder.glob("*.system"))) == 2
    again = _cli(*argv, env=env)                            # both sides read from the cache
    plain = _cli(*argv, "--no-cache", env=dict(env, TOPOC_CACHE=str(tmp_path / "d")))
    assert not (tmp_path / "d" / "systems").exists()
    assert first.returncode == 0 and "no differences" in first.stdout
    for run in (again, plain):
        assert (run.returncode, run.stdout, run.stderr) == \
            (first.returncode, first.stdout, first.stderr)
