"""The PhysioNet 2012 loader: parsing, bad records, sources, split, normalisation, cache.

Fixture files are written by the tests; the real set A is used when ../shared/physionet2012 exists.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import io
import shutil
import tarfile
import urllib.error
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from physionet_fixtures import SET_A, needs_set_a

from nodecourse.data import physionet
from nodecourse.data.physionet import _records as records
from nodecourse.data.physionet import _sources as sources

GOOD = """Time,Parameter,Value
00:00,RecordID,{rid}
00:00,Age,54
00:00,Gender,0
00:00,Height,-1
00:00,ICUType,4
00:00,Weight,80
00:07,GCS,15
00:07,HR,73
00:37,HR,77
00:37,HR,79
01:37,Weight,81.5
01:37,Temp,-1
47:59,HR,60
"""

BAD = {
    "empty file": "",
    "no header": "00:00,RecordID,{rid}\n00:07,HR,73\n",
    "bad time stamp": "Time,Parameter,Value\n00:00,RecordID,{rid}\n0x:07,HR,73\n",
    "unknown parameter": "Time,Parameter,Value\n00:00,RecordID,{rid}\n00:07,Heartbeat,73\n",
    "non-numeric value": "Time,Parameter,Value\n00:00,RecordID,{rid}\n00:07,HR,seventy\n",
    "no record id": "Time,Parameter,Value\n00:00,Age,54\n00:07,HR,73\n",
}


def write_fixture(
    directory: Path, n_good: int = 6, bad: tuple[str, ...] = tuple(BAD), tar: bool = False, set_name: str = "set-a"
) -> Path:
    """Write n_good good records (alternating deaths) and one bad record per reason."""
    folder = directory / set_name
    folder.mkdir(parents=True)
    rows = [records.outcomes_header()]
    for i in range(n_good):
        rid = 140000 + i
        (folder / f"{rid}.txt").write_text(GOOD.format(rid=rid))
        rows.append(f"{rid},1,1,1,-1,{i % 2}")
    for j, reason in enumerate(bad):
        rid = 150000 + j
        (folder / f"{rid}.txt").write_text(BAD[reason].format(rid=rid))
        rows.append(f"{rid},1,1,1,-1,0")
    (directory / f"Outcomes-{set_name[-1]}.txt").write_text("\n".join(rows) + "\n")
    if tar:
        with tarfile.open(directory / f"{set_name}.tar.gz", "w:gz") as tf:
            tf.add(folder, arcname=set_name)
        shutil.rmtree(folder)
    return directory


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NODECOURSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NODECOURSE_DATA", raising=False)


def load_quiet(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return physionet.load(progress=False, verbose=False, **kw)


# ------------------------------------------------------------------ parsing


def test_parse_good_record_descriptors_repeats_and_missing():
    rec = records.parse_record(GOOD.format(rid=7), "7.txt")
    assert rec.record_id == 7
    np.testing.assert_array_equal(rec.static[[0, 1, 3, 4]], [54, 0, 4, 80])
    assert np.isnan(rec.static[2])  # Height -1: not recorded
    hr, w, temp = (records.VARIABLES.index(n) for n in ("HR", "Weight", "Temp"))
    np.testing.assert_allclose(rec.times, [7 / 60, 37 / 60, 97 / 60, 47 + 59 / 60])
    assert rec.values[1, hr] == pytest.approx(78.0)  # two HR rows at 00:37 are averaged
    assert rec.mask[2, w] and rec.values[2, w] == 81.5  # later Weight is a measurement
    assert not rec.mask[:, temp].any()  # Temp -1 is "not recorded"
    assert rec.mask.sum() == 5  # GCS, HR x3 times (00:37 merged), Weight


@pytest.mark.parametrize("reason", list(BAD))
def test_each_kind_of_bad_record_is_named(reason):
    with pytest.raises(records.BadRecord) as info:
        records.parse_record(BAD[reason].format(rid=1), "x.txt")
    assert info.value.reason == reason


def test_time_stamps_outside_the_horizon_are_bad():
    text = "Time,Parameter,Value\n00:00,RecordID,1\n48:01,HR,70\n"
    with pytest.raises(records.BadRecord, match="bad time stamp"):
        records.parse_record(text)


def test_load_skips_and_counts_every_bad_record(tmp_path):
    write_fixture(tmp_path)
    with pytest.warns(physionet.BadRecordWarning, match="skipped 6 bad"):
        data = physionet.load(path=tmp_path, progress=False, verbose=False)
    rep = data.report
    assert (rep.n_files, rep.n_loaded, rep.n_skipped) == (12, 6, 6)
    assert rep.skipped_by_reason == {r: 1 for r in BAD}
    assert "6 of 12 records loaded" in rep.summary()
    assert len(data) == 6 and data.labels.tolist() == [0, 1, 0, 1, 0, 1]


def test_record_without_outcome_is_skipped(tmp_path):
    write_fixture(tmp_path, n_good=3, bad=())
    out = tmp_path / "Outcomes-a.txt"
    out.write_text("\n".join(out.read_text().splitlines()[:-1]) + "\n")  # drop the last outcome
    data = load_quiet(path=tmp_path)
    assert len(data) == 2 and data.report.skipped_by_reason == {"no outcome": 1}


# ------------------------------------------------------------------ grid, split, normalisation


def test_quantization_grid_and_merging(tmp_path):
    write_fixture(tmp_path, n_good=2, bad=())
    hourly = load_quiet(path=tmp_path, quantization=1.0)
    assert hourly.times.shape == (49,) and hourly.values.shape == (2, 49, 37)
    hr = records.VARIABLES.index("HR")
    # 00:07 -> 0 h; 00:37 -> 1 h (nearest), 47:59 -> 48 h
    assert hourly.mask[0, :, hr].nonzero().flatten().tolist() == [0, 1, 48]
    coarse = load_quiet(path=tmp_path, quantization=2.0)
    # At 2 h spacing 00:07 and 00:37 fall into the same cell (0 h): their values are averaged.
    assert coarse.values[0, 0, hr] == pytest.approx((73 + 78) / 2)
    with pytest.raises(ValueError, match="quantization=0"):
        load_quiet(path=tmp_path, quantization=0)


def test_split_is_by_patient_seeded_and_disjoint():
    src = physionet.synthetic(200, seed=3)
    data = load_quiet(path=src.directory)
    a = data.split(test=0.2, val=0.1, seed=5)
    b = data.split(test=0.2, val=0.1, seed=5)
    ids = {k: set(v.record_ids.tolist()) for k, v in a.items()}
    assert sum(len(v) for v in ids.values()) == 200
    assert not (ids["train"] & ids["test"]) and not (ids["train"] & ids["val"]) and not (ids["val"] & ids["test"])
    assert all(torch.equal(a[k].record_ids, b[k].record_ids) for k in a)
    c = data.split(test=0.2, seed=6)
    assert set(c["test"].record_ids.tolist()) != ids["test"]
    with pytest.raises(ValueError, match="test=1.5"):
        data.split(test=1.5)


def test_normalisation_uses_training_statistics_only():
    data = load_quiet(path=physionet.synthetic(120, seed=1).directory)
    parts = data.split(test=0.25, seed=0)
    norm = physionet.Normalizer.fit(parts["train"])
    # Changing the test patients' values must not change the statistics.
    test_raw = parts["test"]
    test_raw.values.mul_(100.0)
    assert torch.equal(physionet.Normalizer.fit(parts["train"]).center, norm.center)
    train = norm.transform(parts["train"])
    m = train.mask.bool()
    hr = records.VARIABLES.index("HR")
    observed = train.values[..., hr][m[..., hr]]
    assert abs(float(observed.mean())) < 1e-4 and abs(float(observed.std()) - 1) < 1e-2
    assert float(train.values[~m].abs().max()) == 0.0
    assert train.static_mask.shape == train.static.shape and not torch.isnan(train.static).any()
    with pytest.raises(ValueError, match="already normalised"):
        norm.transform(train)
    with pytest.raises(ValueError, match="method='max'"):
        physionet.Normalizer.fit(parts["train"], method="max")
    back = norm.inverse(train.values)
    torch.testing.assert_close(back[m], parts["train"].values[m], rtol=1e-5, atol=1e-3)


def test_minmax_uses_range_not_max():
    data = load_quiet(path=physionet.synthetic(60, seed=2).directory)
    norm = physionet.Normalizer.fit(data, method="minmax")
    x = norm.transform(data)
    m = data.mask.bool()
    temp = records.VARIABLES.index("Temp")
    obs = x.values[..., temp][m[..., temp]]
    assert float(obs.min()) == pytest.approx(0.0, abs=1e-6) and float(obs.max()) == pytest.approx(1.0, abs=1e-6)


# ------------------------------------------------------------------ sources, cache, synthetic


def test_tar_and_folder_give_the_same_tensors(tmp_path):
    a = write_fixture(tmp_path / "a", bad=("empty file",))
    b = write_fixture(tmp_path / "b", bad=("empty file",), tar=True)
    da, db = load_quiet(path=a), load_quiet(path=b)
    assert torch.equal(da.values, db.values) and torch.equal(da.mask, db.mask)
    assert db.report.n_skipped == 1


def test_second_load_comes_from_the_cache(tmp_path, monkeypatch):
    write_fixture(tmp_path / "d", bad=())
    first = load_quiet(path=tmp_path / "d")
    cached = list((tmp_path / "cache" / "physionet").glob("*.pt"))
    assert len(cached) == 1
    monkeypatch.setattr(physionet, "parse_source", lambda *a, **k: pytest.fail("parsed again"))
    second = load_quiet(path=tmp_path / "d")
    assert torch.equal(first.values, second.values) and torch.equal(first.labels, second.labels)
    # A different grid is a different cache entry (parsing again is required).
    with pytest.raises(pytest.fail.Exception):
        load_quiet(path=tmp_path / "d", quantization=0.5)


def test_locate_order_explicit_then_env_then_shared(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "SHARED_DIR", tmp_path / "nowhere")
    monkeypatch.setattr(physionet, "SHARED_DIR", tmp_path / "nowhere")
    assert physionet.locate() is None
    write_fixture(tmp_path / "env", bad=())
    monkeypatch.setenv("NODECOURSE_DATA", str(tmp_path / "env"))
    assert physionet.locate().kind == "env"
    write_fixture(tmp_path / "explicit", bad=())
    assert physionet.locate(path=tmp_path / "explicit").kind == "path"
    with pytest.raises(FileNotFoundError, match="path=.*does not hold PhysioNet set-a"):
        physionet.locate(path=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="set_name='set-c'"):
        physionet.locate("set-c")


def test_synthetic_fallback_is_announced(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "SHARED_DIR", tmp_path / "nowhere")
    monkeypatch.setattr(physionet, "SHARED_DIR", tmp_path / "nowhere")
    with pytest.warns(physionet.SyntheticDataWarning, match="SYNTHETIC"):
        data = physionet.load(synthetic_patients=150, progress=False, verbose=False)
    assert data.report.source == "synthetic" and len(data) == 150
    rate = float(data.labels.mean())
    assert 0.05 < rate < 0.3  # about set A's 13.85 % deaths
    with pytest.raises(FileNotFoundError, match="allow_synthetic"):
        physionet.load(allow_synthetic=False, progress=False, verbose=False)


def _fake_archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("set-a/1.txt")
        body = GOOD.format(rid=1).encode()
        info.size = len(body)
        tf.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def _sums(payload: dict) -> bytes:
    return "".join(f"{hashlib.sha256(v).hexdigest()}  {k}\n" for k, v in payload.items()).encode()


def _opener(payload: dict, broken: str | None = None):
    """A fake urlopen serving ``payload`` by file name; ``broken`` breaks mid-transfer."""

    class Response(io.BytesIO):
        def __init__(self, name, data):
            super().__init__(data)
            self.name = name

        def read(self, n=-1):
            if self.name == broken and self.tell() > 0:
                raise http.client.IncompleteRead(b"", 1000)
            return super().read(min(n, 16) if self.name == broken else n)

    def urlopen(url, timeout):
        name = url.rsplit("/", 1)[1]
        if name not in payload:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        return Response(name, payload[name])

    return urlopen


def test_download_is_checked_against_its_sums(tmp_path, monkeypatch):
    payload = {"Outcomes-a.txt": b"RecordID,In-hospital_death\n1,0\n", "set-a.tar.gz": _fake_archive()}
    monkeypatch.setattr(sources.urllib.request, "urlopen", _opener(payload))
    # Our fake archive does not match set A's published sha256: it must be refused.
    with pytest.raises(physionet.DownloadError, match="does not match its known sha256"):
        sources.fetch("set-a", tmp_path / "dl")
    assert not (tmp_path / "dl" / "set-a.tar.gz").exists()
    # Without our pinned sums, PhysioNet's SHA256SUMS.txt decides.
    monkeypatch.setattr(sources, "SHA256", {})
    monkeypatch.setattr(sources.urllib.request, "urlopen", _opener({**payload, "SHA256SUMS.txt": _sums(payload)}))
    src = sources.fetch("set-a", tmp_path / "dl")
    assert src.kind == "download" and sources.has_set(src.directory, "set-a")

    def offline(url, timeout):
        raise OSError("no network")

    monkeypatch.setattr(sources.urllib.request, "urlopen", offline)
    assert sources.fetch("set-b", tmp_path / "dl2") is None


def test_set_b_download_is_checked_and_nothing_partial_is_left(tmp_path, monkeypatch):
    """Case 12: set B and its outcomes are checked against PhysioNet's sums; an unverifiable
    file and an interrupted transfer raise DownloadError and leave no file behind."""
    payload = {"Outcomes-b.txt": b"RecordID,In-hospital_death\n1,0\n", "set-b.tar.gz": _fake_archive()}
    dl = tmp_path / "dl"
    # no sums published: refused, not used unverified
    monkeypatch.setattr(sources.urllib.request, "urlopen", _opener(payload))
    with pytest.raises(physionet.DownloadError, match="no sha256 sum is known for set-b.tar.gz"):
        sources.fetch("set-b", dl)
    assert sorted(p.name for p in dl.iterdir()) == []
    # a sum that does not match (the outcomes were altered after the sums were published)
    sums = _sums(payload)
    altered = {**payload, "Outcomes-b.txt": b"RecordID,In-hospital_death\n1,1\n", "SHA256SUMS.txt": sums}
    monkeypatch.setattr(sources.urllib.request, "urlopen", _opener(altered))
    with pytest.raises(physionet.DownloadError, match="Outcomes-b.txt does not match"):
        sources.fetch("set-b", dl)
    assert not (dl / "Outcomes-b.txt").exists()
    # interrupted mid-transfer: a named error, no .part file
    shutil.rmtree(dl)
    monkeypatch.setattr(
        sources.urllib.request, "urlopen", _opener({**payload, "SHA256SUMS.txt": sums}, broken="set-b.tar.gz")
    )
    with pytest.raises(physionet.DownloadError, match="set-b.tar.gz was interrupted.*IncompleteRead"):
        sources.fetch("set-b", dl)
    assert not list(dl.glob("*.part")) and not (dl / "set-b.tar.gz").exists()
    # and all verified: the set is there
    monkeypatch.setattr(sources.urllib.request, "urlopen", _opener({**payload, "SHA256SUMS.txt": sums}))
    assert sources.has_set(sources.fetch("set-b", dl).directory, "set-b")


def _downloadable(set_name: str) -> dict[str, bytes]:
    """What a faked PhysioNet serves for ``set_name``: one good record and its outcome."""
    outcomes = f"{records.outcomes_header()}\n1,1,1,1,-1,0\n".encode()
    return {f"Outcomes-{set_name[-1]}.txt": outcomes, f"{set_name}.tar.gz": _fake_archive()}


def test_set_b_download_checked_only_against_the_hosts_sums_is_unverified(tmp_path, monkeypatch):
    """Set B's sums come from the host that serves its files, so they check the transfer, not the
    file: the download is reported UNVERIFIED (Source, load report, a warning giving the sums) on
    the first load and on every load from the cached copy. The network is faked."""
    monkeypatch.setattr(sources, "SHARED_DIR", tmp_path / "nowhere")
    monkeypatch.setattr(physionet, "SHARED_DIR", tmp_path / "nowhere")
    payload = _downloadable("set-b")
    monkeypatch.setattr(sources.urllib.request, "urlopen", _opener({**payload, "SHA256SUMS.txt": _sums(payload)}))
    with pytest.warns(sources.UnverifiedDownloadWarning, match="set-b .* is an UNVERIFIED download") as caught:
        src = physionet.locate("set-b", download=True)
    assert src.kind == "download" and src.verified is False
    assert src.unverified == ("set-b.tar.gz: no sha256 pinned here", "Outcomes-b.txt: no sha256 pinned here")
    assert "UNVERIFIED download: set-b.tar.gz: no sha256 pinned here" in src.shown
    message = str(caught[0].message)
    for name, body in payload.items():  # the sums to compare with a trusted copy
        assert f"{name} {hashlib.sha256(body).hexdigest()}" in message
    assert "SHA256SUMS.txt, which the same host serves" in message and "sources.SHA256" in message
    # The load's provenance carries it; the cached download is still unverified the next time.
    for _ in range(2):
        with pytest.warns(sources.UnverifiedDownloadWarning):
            data = physionet.load("set-b", download=True, progress=False, verbose=False)
        assert data.report.source == "download" and "UNVERIFIED download" in data.report.summary()
        assert data.report.n_loaded == 1


def test_a_download_that_matches_pinned_sums_is_verified_until_it_changes(tmp_path, monkeypatch):
    """With sums pinned here (as set A's are) the download is verified, with no warning and no
    SHA256SUMS.txt fetched; an archive changed in the cache afterwards is reported unverified."""
    monkeypatch.setattr(sources, "SHARED_DIR", tmp_path / "nowhere")
    payload = _downloadable("set-a")
    monkeypatch.setattr(sources, "SHA256", {n: hashlib.sha256(b).hexdigest() for n, b in payload.items()})
    monkeypatch.setattr(sources.urllib.request, "urlopen", _opener(payload))  # serves no SHA256SUMS.txt
    with warnings.catch_warnings():
        warnings.simplefilter("error", sources.UnverifiedDownloadWarning)
        src = sources.locate("set-a", download=True)
        assert src.verified is True and src.unverified == () and "UNVERIFIED" not in src.shown
        assert sources.locate("set-a").verified is True  # the cached copy, checked again
    write_fixture(tmp_path / "mine", bad=())
    assert sources.locate(path=tmp_path / "mine").verified is None  # not downloaded here
    archive = src.directory / "set-a.tar.gz"
    archive.write_bytes(archive.read_bytes() + b"\0")
    with pytest.warns(sources.UnverifiedDownloadWarning, match="set-a.tar.gz: differs from its pinned sha256"):
        assert sources.locate("set-a").unverified == ("set-a.tar.gz: differs from its pinned sha256",)


# ------------------------------------------------------------------ damaged data (cases 8-11)


def _tar_bytes(folder: Path, set_name: str = "set-a") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for p in sorted(folder.glob("*.txt")):
            tf.add(p, arcname=f"{set_name}/{p.name}")
    return buf.getvalue()


@pytest.mark.parametrize("damage", ["truncated gzip", "garbage", "not gzip", "cut inside a member"])
def test_a_damaged_archive_is_a_named_error(tmp_path, damage):
    """Case 8 (and 9, cut inside a member): never a raw EOFError or ReadError."""
    write_fixture(tmp_path, n_good=30, bad=())
    raw = _tar_bytes(tmp_path / "set-a")
    shutil.rmtree(tmp_path / "set-a")
    packed = gzip.compress(raw)
    data = {
        "truncated gzip": packed[: len(packed) // 2],
        "garbage": b"\x1f\x8b" + bytes(range(256)) * 8,
        "not gzip": b"this is not an archive\n" * 40,
        "cut inside a member": gzip.compress(raw[: len(raw) // 2 + 100]),
    }[damage]
    (tmp_path / "set-a.tar.gz").write_bytes(data)
    with pytest.raises(physionet.DamagedArchive, match="set-a.tar.gz is damaged.*pass a good copy"):
        load_quiet(path=tmp_path)


def test_an_archive_cut_between_members_reports_the_missing_records(tmp_path):
    """Case 9: a tar cut at a member boundary, in a valid gzip stream, reads without error:
    the records the outcomes file lists but the archive lacks are counted and warned about."""
    write_fixture(tmp_path, n_good=30, bad=())
    raw = _tar_bytes(tmp_path / "set-a")
    shutil.rmtree(tmp_path / "set-a")
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        members = tf.getmembers()
    (tmp_path / "set-a.tar.gz").write_bytes(gzip.compress(raw[: members[15].offset]))
    with pytest.warns(physionet.MissingRecordWarning, match="MISSING 15 of the 30 records Outcomes-a.txt lists"):
        data = physionet.load(path=tmp_path, progress=False, verbose=False)
    assert len(data) == 15 and len(data.report.missing) == 15 and data.report.n_expected == 30


def test_labels_must_be_0_or_1(tmp_path):
    """Case 10: outcome labels 7 and -1 are skipped as "bad outcome", counted."""
    write_fixture(tmp_path, n_good=6, bad=())
    out = tmp_path / "Outcomes-a.txt"
    lines = out.read_text().splitlines()
    lines[1], lines[2] = lines[1][: lines[1].rindex(",")] + ",7", lines[2][: lines[2].rindex(",")] + ",-1"
    out.write_text("\n".join(lines) + "\n")
    with pytest.warns(physionet.BadRecordWarning, match="2 bad outcome"):
        data = physionet.load(path=tmp_path, progress=False, verbose=False)
    assert len(data) == 4 and set(data.labels.tolist()) <= {0.0, 1.0}
    assert data.report.skipped_by_reason == {"bad outcome": 2}


def test_an_empty_set_is_an_error_that_says_what_was_looked_for(tmp_path):
    """Case 10: an empty set-a/ and a set whose every record is bad end in EmptySet, not n = 0."""
    write_fixture(tmp_path / "empty", n_good=0, bad=())
    with pytest.raises(physionet.EmptySet, match=r"no usable PhysioNet set-a record in .*set-a: found no record files"):
        load_quiet(path=tmp_path / "empty")
    write_fixture(tmp_path / "allbad", n_good=0)
    with pytest.raises(physionet.EmptySet, match=r"found 6 record file\(s\), all skipped"):
        load_quiet(path=tmp_path / "allbad")


def test_an_unreadable_record_file_is_a_counted_skip(tmp_path):
    write_fixture(tmp_path, n_good=3, bad=())
    (tmp_path / "set-a" / "140001.txt").unlink()
    (tmp_path / "set-a" / "140001.txt").mkdir()  # a name that cannot be read as a file
    data = load_quiet(path=tmp_path)
    assert len(data) == 2 and data.report.skipped_by_reason == {"unreadable file": 1}


def test_a_planted_cache_cannot_run_code(tmp_path):
    """Case 11: the cache is read with weights_only=True; a pickle planted at its path is
    refused (nothing runs) and the set is parsed again."""
    write_fixture(tmp_path / "d", bad=())
    source = physionet.locate(path=tmp_path / "d")
    target = physionet.cache_file(source, 1.0)
    target.parent.mkdir(parents=True)
    witness = tmp_path / "code-ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (witness,))

    torch.save({"x": Payload()}, target)
    data = load_quiet(path=tmp_path / "d")
    assert not witness.exists() and len(data) == 6
    # the rebuilt cache holds plain tensors only and loads with weights_only=True
    assert torch.load(target, weights_only=True)["labels"].shape == (6,)


# ------------------------------------------------------------------ the real set A


@needs_set_a
@pytest.mark.slow
def test_real_set_a_counts_match_the_readme():
    data = load_quiet()
    assert data.report.source == "shared"
    assert len(data) == 4000 and data.report.n_skipped == 0
    assert int(data.labels.sum()) == 554
    assert data.values.shape == (4000, 49, 37)
    hr = records.VARIABLES.index("HR")
    assert 50 < float(data.values[..., hr][data.mask[..., hr].bool()].mean()) < 120


@needs_set_a
def test_corrupted_copy_of_real_records_loads_the_good_ones(tmp_path):
    """Take 60 real records, corrupt 5 in five different ways, and load the copy."""
    with tarfile.open(SET_A / "set-a.tar.gz", "r:gz") as tf:
        texts = []
        for m in tf:
            if m.isfile() and m.name.endswith(".txt"):
                texts.append((Path(m.name).name, tf.extractfile(m).read().decode()))
            if len(texts) == 60:
                break
    corrupt = {
        0: lambda t: "",
        1: lambda t: t.split("\n", 1)[1],  # header removed
        2: lambda t: t.replace("\n00:0", "\n0:0x", 1).replace("RecordID", "RecordID", 1),
        3: lambda t: t + "12:00,Unobtainium,3\n",
        4: lambda t: t + "12:00,HR,n/a\n",
    }
    folder = tmp_path / "set-a"
    folder.mkdir()
    for i, (name, text) in enumerate(texts):
        (folder / name).write_text(corrupt[i](text) if i in corrupt else text)
    shutil.copy(SET_A / "Outcomes-a.txt", tmp_path / "Outcomes-a.txt")
    with pytest.warns(physionet.BadRecordWarning):
        data = physionet.load(path=tmp_path, progress=False, verbose=False)
    assert data.report.n_files == 60 and len(data) == 55 and data.report.n_skipped == 5
    assert set(data.report.skipped_by_reason) == {
        "empty file",
        "no header",
        "bad time stamp",
        "unknown parameter",
        "non-numeric value",
    }
