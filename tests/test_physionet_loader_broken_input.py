"""The PhysioNet loader against hostile or broken input.

Each test names its case:

1. a value finite in float64 but not in float32 (``HR,1e308``);
2. conflicting duplicate rows in the outcomes file;
3. one RecordID in two record files;
4. the tensor cache keyed by content, not by size and mtime;
5. strict numbers (``1_000``, non-ASCII digits);
6. symlinks leaving the data folder, FIFOs, devices, oversized files;
   and the same for the members of a tar archive.

Fixture files are written under ``tmp_path``; nothing is ever read from outside it.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from nodecourse.data import physionet
from nodecourse.data.physionet import _records as records
from nodecourse.data.physionet import _safe_read as safe_read

RECORD = """Time,Parameter,Value
00:00,RecordID,{rid}
00:00,Age,54
00:00,Gender,0
00:00,Height,-1
00:00,ICUType,4
00:00,Weight,80
00:07,GCS,15
00:07,HR,73
00:37,HR,77
47:59,HR,{hr}
"""
HR = records.VARIABLES.index("HR")


def record(rid: int, hr: str = "60", extra: str = "") -> str:
    return RECORD.format(rid=rid, hr=hr) + extra


def write_set(
    directory: Path,
    texts: dict[str, str],
    outcomes: dict[int, int] | None = None,
    extra_outcome_rows: tuple[str, ...] = (),
) -> Path:
    """``texts``: file name -> content under ``directory/set-a``; outcomes default to one row per
    file whose stem is a number (label = stem % 2)."""
    folder = directory / "set-a"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    if outcomes is None:
        outcomes = {int(Path(n).stem): int(Path(n).stem) % 2 for n in texts if Path(n).stem.isdigit()}
    rows = [records.outcomes_header()] + [f"{rid},1,1,1,-1,{y}" for rid, y in outcomes.items()]
    rows += list(extra_outcome_rows)
    (directory / "Outcomes-a.txt").write_text("\n".join(rows) + "\n")
    return directory


def good_set(directory: Path, n: int = 3, **kw) -> Path:
    return write_set(directory, {f"{140000 + i}.txt": record(140000 + i) for i in range(n)}, **kw)


def tar_set(directory: Path, members: list[tarfile.TarInfo | tuple[str, str]], outcomes: dict[int, int]) -> Path:
    """An archive ``set-a.tar.gz`` built member by member (deterministic bytes), plus outcomes."""
    directory.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tf.addfile(m)
            else:
                name, text = m
                info = tarfile.TarInfo(name)
                body = text.encode()
                info.size, info.mtime = len(body), 1_300_000_000
                tf.addfile(info, io.BytesIO(body))
    (directory / "set-a.tar.gz").write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    rows = [records.outcomes_header()] + [f"{rid},1,1,1,-1,{y}" for rid, y in outcomes.items()]
    (directory / "Outcomes-a.txt").write_text("\n".join(rows) + "\n")
    return directory


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NODECOURSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NODECOURSE_DATA", raising=False)


def load(path, **kw):
    return physionet.load(path=path, progress=False, verbose=False, **kw)


def load_quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(path, **kw)


# ------------------------------------------------------------------ case 1: float32 range


@pytest.mark.parametrize("row", ["47:59,HR,1e308", "47:59,HR,-3.5e38", "47:59,HR,1e999", "00:00,Age,1e300"])
def test_case1_a_value_outside_float32_range_skips_the_record(tmp_path, row):
    """1e308 is finite in float64 but inf in float32: the record is skipped and counted, and the
    warning names the file and the parameter (not 2,352 NaNs after normalising)."""
    texts = {f"{140000 + i}.txt": record(140000 + i) for i in range(3)}
    bad = record(140003)
    if row.startswith("00:00,Age"):
        bad = bad.replace("00:00,Age,54", row)
    else:
        bad += row + "\n"
    texts["140003.txt"] = bad
    write_set(tmp_path, texts)
    param = row.split(",")[1]
    with pytest.warns(physionet.BadRecordWarning, match=rf"140003\.txt.*out-of-range value.*{param}="):
        data = load(tmp_path)
    assert len(data) == 3 and 140003 not in data.record_ids.tolist()
    assert data.report.skipped_by_reason == {"out-of-range value": 1}
    assert torch.isfinite(data.values).all() and not torch.isinf(data.static).any()
    norm = physionet.Normalizer.fit(data)
    assert torch.isfinite(norm.transform(data).values).all()


def test_case1_float32_max_itself_is_accepted_and_a_normaliser_overflow_is_named(tmp_path):
    """3.4e38 is finite in float32, so it loads; its square is not, and the z-score Normalizer
    says which variable overflowed instead of returning a scale of inf (HR all zeros)."""
    write_set(tmp_path, {"140000.txt": record(140000, hr="3.4e38"), "140001.txt": record(140001)})
    data = load(tmp_path)
    assert len(data) == 2 and float(data.values[..., HR].max()) == pytest.approx(3.4e38, rel=1e-6)
    with pytest.raises(ValueError, match=r"method='zscore'.*HR \(largest \|value\| 3\.4e\+38\) overflow torch.float32"):
        physionet.Normalizer.fit(data)
    assert torch.isfinite(physionet.Normalizer.fit(data, method="minmax").scale).all()


def test_cases1_and_5_bad_values_inside_an_archive_are_counted_the_same_way(tmp_path):
    members = [(f"set-a/{140000 + i}.txt", record(140000 + i)) for i in range(2)]
    members += [("set-a/140002.txt", record(140002, hr="1e308")), ("set-a/140003.txt", record(140003, hr="1_000"))]
    tar_set(tmp_path, members, {140000: 0, 140001: 1, 140002: 0, 140003: 1})
    with pytest.warns(physionet.BadRecordWarning, match=r"140002\.txt.*out-of-range value.*HR='1e308'"):
        data = load(tmp_path)
    assert data.record_ids.tolist() == [140000, 140001] and torch.isfinite(data.values).all()
    assert data.report.skipped_by_reason == {"out-of-range value": 1, "non-numeric value": 1}


# ------------------------------------------------------------------ case 2: conflicting outcomes


@pytest.mark.parametrize("tar", [False, True])
def test_case2_conflicting_outcome_rows_are_an_error_naming_the_record_and_the_file(tmp_path, tar):
    if tar:
        tar_set(
            tmp_path,
            [(f"set-a/{140000 + i}.txt", record(140000 + i)) for i in range(3)],
            {140000: 0, 140001: 1, 140002: 0},
        )
        out = tmp_path / "Outcomes-a.txt"
        out.write_text(out.read_text() + "140001,1,1,1,-1,0\n")
    else:
        good_set(tmp_path, extra_outcome_rows=("140001,1,1,1,-1,0",))  # 140001 was written with label 1
    with pytest.raises(
        physionet.ConflictingOutcomes,
        match=r"Outcomes-a\.txt.*RecordID 140001.*In-hospital_death 1 \(line 3\) and 0 \(line 5\)",
    ):
        load_quiet(tmp_path)
    with pytest.raises(physionet.ConflictingOutcomes, match="RecordID 140001"):
        records.parse_outcomes((tmp_path / "Outcomes-a.txt").read_text(), "Outcomes-a.txt")


def test_case2_identical_duplicate_outcome_rows_are_accepted(tmp_path):
    """An exact repeat (same label) says nothing new: accepted, as documented."""
    good_set(tmp_path, extra_outcome_rows=("140001,9,9,9,9,1",))  # same label, other columns differ
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = load(tmp_path)
    assert len(data) == 3 and data.labels.tolist() == [0.0, 1.0, 0.0]


# ------------------------------------------------------------------ case 3: one id, two files


def test_case3_one_record_id_in_two_files_skips_both_and_names_them(tmp_path):
    texts = {f"{140000 + i}.txt": record(140000 + i) for i in range(5)}
    texts["140099.txt"] = record(140001, hr="99")  # a second file claiming patient 140001
    write_set(tmp_path, texts, outcomes={140000: 0, 140001: 1, 140002: 0, 140003: 1, 140004: 1, 140099: 0})
    with pytest.warns(
        physionet.BadRecordWarning, match=r"duplicate record id.*RecordID 140001.*140001\.txt.*140099\.txt"
    ):
        data = load(tmp_path)
    assert sorted(data.record_ids.tolist()) == [140000, 140002, 140003, 140004]
    assert data.report.skipped_by_reason == {"duplicate record id": 2}
    names = sorted(name for name, _ in data.report.skipped)
    assert names == ["140001.txt", "140099.txt"]
    # the split can no longer put one patient on both sides
    parts = data.split(test=0.5, seed=0)
    assert not set(parts["train"].record_ids.tolist()) & set(parts["test"].record_ids.tolist())


def test_case3_duplicate_ids_in_an_archive_are_skipped_too(tmp_path):
    """Two members with the same RecordID, one of them the same member name appended twice."""
    members = [(f"set-a/{140000 + i}.txt", record(140000 + i)) for i in range(3)]
    members += [("set-a/140001.txt", record(140001, hr="99")), ("set-a/copy/140077.txt", record(140002))]
    tar_set(tmp_path, members, {140000: 0, 140001: 1, 140002: 0, 140077: 1})
    with pytest.warns(physionet.BadRecordWarning, match="duplicate record id"):
        data = load(tmp_path)
    assert data.record_ids.tolist() == [140000]
    assert data.report.skipped_by_reason == {"duplicate record id": 4}
    details = " ".join(d for _, d in data.report.skipped)
    assert "140001.txt appears twice" in details and "140077.txt" in details


# ------------------------------------------------------------------ case 4: cache by content


def test_case4_an_edit_that_keeps_size_and_mtime_is_seen(tmp_path):
    good_set(tmp_path)
    target = tmp_path / "set-a" / "140001.txt"
    first = load(tmp_path)
    assert float(first.values[1, 48, HR]) == 60.0
    st = target.stat()
    target.write_text(record(140001, hr="61"))  # same length, one digit different
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
    second = load(tmp_path)
    assert float(second.values[1, 48, HR]) == 61.0
    # and unchanged content is still served from the cache
    assert len(list((tmp_path / "cache" / "physionet").glob("*.pt"))) == 2


def test_case4_the_archive_is_keyed_by_content_too(tmp_path, monkeypatch):
    outcomes = {140000: 0, 140001: 1}
    tar_set(tmp_path, [(f"set-a/{r}.txt", record(r)) for r in outcomes], outcomes)
    archive, out = tmp_path / "set-a.tar.gz", tmp_path / "Outcomes-a.txt"
    first = load(tmp_path)
    st, st_out = archive.stat(), out.stat()
    tar_set(tmp_path, [(f"set-a/{r}.txt", record(r, hr="61")) for r in outcomes], outcomes)
    os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(out, ns=(st_out.st_atime_ns, st_out.st_mtime_ns))  # the outcomes are rewritten unchanged
    assert archive.stat().st_size == st.st_size  # gzip of a one-digit change: the same length
    second = load(tmp_path)
    assert float(first.values[0, 48, HR]) == 60.0 and float(second.values[0, 48, HR]) == 61.0
    # a cache hit still parses nothing
    monkeypatch.setattr(physionet, "parse_source", lambda *a, **k: pytest.fail("parsed again"))
    third = load(tmp_path)
    assert torch.equal(third.values, second.values)


# ------------------------------------------------------------------ case 5: strict numbers


@pytest.mark.parametrize("text", ["1_000", "7_3", "\u0667\u0663", "\uff17\uff13", "infinity", "nan", "0x49", "73.0.1"])
def test_case5_a_value_that_is_not_a_plain_decimal_is_a_bad_value(tmp_path, text):
    """float() accepts '1_000' and Arabic-Indic or full-width digits; the record format does not."""
    write_set(tmp_path, {"140000.txt": record(140000), "140001.txt": record(140001, hr=text)})
    with pytest.warns(physionet.BadRecordWarning, match=r"140001\.txt.*non-numeric value.*HR="):
        data = load(tmp_path)
    assert data.record_ids.tolist() == [140000]
    assert data.report.skipped_by_reason == {"non-numeric value": 1}


@pytest.mark.parametrize(
    "text, value",
    [("61", 61.0), ("+61", 61.0), ("61.", 61.0), (".5", 0.5), ("6.1e1", 61.0), ("610E-1", 61.0), (" 61 ", 61.0)],
)
def test_case5_plain_decimals_still_parse(text, value):
    rec = records.parse_record(record(1, hr=text), "1.txt")
    assert rec.values[-1, HR] == pytest.approx(value)


@pytest.mark.parametrize(
    "rid_text, why",
    [
        ("140001.5", "not a whole number"),
        ("1e30", "not a whole number"),
        ("-1", "not a whole number"),
        ("99999999999999999999", "too large"),
    ],
)
def test_case5_a_record_id_must_be_a_plain_integer(rid_text, why):
    """Today 140001.5 is truncated to 140001 and 1e30 overflows int64 deep in torch."""
    with pytest.raises(records.BadRecord, match=rf"bad record id.*RecordID='{rid_text}'.*{why}"):
        records.parse_record(RECORD.format(rid=rid_text, hr="60"), "x.txt")


def test_case5_two_different_record_ids_in_one_file_are_bad():
    text = record(140001).replace("00:00,Age,54", "00:00,Age,54\n00:00,RecordID,140002")
    with pytest.raises(records.BadRecord, match="bad record id.*140001.*140002"):
        records.parse_record(text, "x.txt")


def test_case5_time_stamps_are_ascii_digits():
    with pytest.raises(records.BadRecord, match="bad time stamp"):
        records.parse_record(record(1, extra="\u0660\u0661:07,HR,70\n"), "x.txt")


# ------------------------------------------------------------------ case 6: links, FIFOs, devices, size


def test_case6_a_symlink_leaving_the_data_folder_is_a_counted_skip(tmp_path):
    data_dir = tmp_path / "data"
    good_set(data_dir, outcomes={140000: 0, 140001: 1, 140002: 0, 140777: 1, 140050: 0})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text(record(140777))
    (data_dir / "set-a" / "140777.txt").symlink_to(outside / "secret.txt")
    # a link that stays inside the data folder is fine
    (data_dir / "kept").mkdir()
    (data_dir / "kept" / "140050.txt").write_text(record(140050))
    (data_dir / "set-a" / "140050.txt").symlink_to(Path("..") / "kept" / "140050.txt")
    with pytest.warns(physionet.BadRecordWarning, match=r"140777\.txt.*outside the data folder.*secret\.txt"):
        data = load(data_dir)
    assert sorted(data.record_ids.tolist()) == [140000, 140001, 140002, 140050]
    assert data.report.skipped_by_reason == {"outside the data folder": 1}


@pytest.mark.timeout(30)  # today's loader blocks on the FIFO: fail fast rather than hang
def test_case6_a_fifo_named_like_a_record_is_refused_without_blocking(tmp_path):
    good_set(tmp_path)
    os.mkfifo(tmp_path / "set-a" / "999003.txt")
    with pytest.warns(physionet.BadRecordWarning, match=r"999003\.txt.*unreadable file.*FIFO"):
        data = load(tmp_path)
    assert len(data) == 3 and data.report.skipped_by_reason == {"unreadable file": 1}
    # the cache key is computed without opening it either
    assert len(load_quiet(tmp_path)) == 3


def test_case6_a_link_to_a_device_is_refused_without_reading_it(tmp_path):
    """A link to /dev/zero would be read until memory runs out: it leaves the folder."""
    good_set(tmp_path)
    (tmp_path / "set-a" / "999004.txt").symlink_to("/dev/zero")
    # a link inside the folder to something that is not a regular file is refused as well
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "set-a" / "999005.txt").symlink_to(tmp_path / "pipe")
    with pytest.warns(physionet.BadRecordWarning, match=r"999004\.txt.*/dev/zero"):
        data = load(tmp_path)
    assert len(data) == 3
    assert data.report.skipped_by_reason == {"outside the data folder": 1, "unreadable file": 1}


def test_case6_an_oversized_record_is_a_counted_skip(tmp_path, monkeypatch):
    monkeypatch.setattr(safe_read, "RECORD_SIZE_LIMIT", 1000)
    good_set(tmp_path, n=2)
    big = record(140002, extra="47:00,HR,70\n" * 200)
    (tmp_path / "set-a" / "140002.txt").write_text(big)
    with pytest.warns(physionet.BadRecordWarning, match=r"140002\.txt.*too large.*1000"):
        data = load(tmp_path, cache=False)
    assert len(data) == 2 and data.report.skipped_by_reason == {"too large": 1}


def test_case6_the_outcomes_file_and_the_set_folder_must_stay_inside(tmp_path):
    elsewhere = good_set(tmp_path / "elsewhere")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "Outcomes-a.txt").symlink_to(elsewhere / "Outcomes-a.txt")
    (linked / "set-a").symlink_to(elsewhere / "set-a")
    with pytest.raises(physionet.PhysioNetError, match=r"Outcomes-a\.txt.*outside the data folder"):
        load_quiet(linked)
    (linked / "Outcomes-a.txt").unlink()
    (linked / "Outcomes-a.txt").write_text((elsewhere / "Outcomes-a.txt").read_text())
    with pytest.raises(physionet.PhysioNetError, match=r"set-a.*outside the data folder"):
        load_quiet(linked)
    # a data folder that is itself a link is the folder the user named: allowed
    (tmp_path / "alias").symlink_to(elsewhere)
    assert len(load_quiet(tmp_path / "alias")) == 3


def _member(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mtime = kind, linkname, 1_300_000_000
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 5
    return info


def test_case6_archive_links_devices_and_escaping_members_are_counted_skips(tmp_path):
    """Nothing is ever unpacked; members the folder loader would refuse are refused here too."""
    good = [(f"set-a/{140000 + i}.txt", record(140000 + i)) for i in range(3)]
    odd = [
        _member("set-a/140090.txt", tarfile.SYMTYPE, "/etc/passwd"),
        _member("set-a/140091.txt", tarfile.LNKTYPE, "set-a/140000.txt"),
        _member("set-a/140092.txt", tarfile.CHRTYPE),
        _member("set-a/140093.txt", tarfile.FIFOTYPE),
        ("../140094.txt", record(140094)),
        ("/tmp/nodecourse-test-140095.txt", record(140095)),
        ("set-a/../../140096.txt", record(140096)),
    ]
    outcomes = {r: 0 for r in (140000, 140001, 140002, 140090, 140091, 140092, 140093, 140094, 140095, 140096)}
    d = tar_set(tmp_path / "d", good + odd, outcomes)
    with pytest.warns(physionet.BadRecordWarning, match=r"140090\.txt.*symbolic link to '/etc/passwd'"):
        data = load(d)
    assert sorted(data.record_ids.tolist()) == [140000, 140001, 140002]
    assert data.report.skipped_by_reason == {"unreadable file": 4, "outside the data folder": 3}
    assert data.report.n_files == 10
    assert not (tmp_path / "140094.txt").exists() and not Path("/tmp/nodecourse-test-140095.txt").exists()
    assert not (tmp_path / "140096.txt").exists()


def test_case6_an_oversized_archive_member_is_skipped_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(safe_read, "RECORD_SIZE_LIMIT", 1000)
    members = [(f"set-a/{140000 + i}.txt", record(140000 + i)) for i in range(2)]
    members.append(("set-a/140002.txt", record(140002, extra="47:00,HR,70\n" * 200)))
    tar_set(tmp_path, members, {140000: 0, 140001: 1, 140002: 0})
    with pytest.warns(physionet.BadRecordWarning, match=r"140002\.txt.*too large"):
        data = load(tmp_path, cache=False)
    assert len(data) == 2 and data.report.skipped_by_reason == {"too large": 1}


def test_a_clean_set_reads_the_same_from_a_tar_and_a_folder(tmp_path):
    """The refusals live beside the reading, not instead of it: a clean set reads the same both ways."""
    texts = {f"{140000 + i}.txt": record(140000 + i, hr=str(60 + i)) for i in range(5)}
    write_set(tmp_path / "folder", texts)
    tar_set(
        tmp_path / "tar",
        [(f"set-a/{k}", v) for k, v in texts.items()],
        {int(Path(k).stem): int(Path(k).stem) % 2 for k in texts},
    )
    a, b = load(tmp_path / "folder"), load(tmp_path / "tar")
    assert torch.equal(a.values, b.values) and torch.equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.record_ids.numpy(), np.arange(140000, 140005))
