"""A log whose writes fail (/dev/full answers every write with ENOSPC): said once, rows counted, never raised."""

import errno
import os
import resource

import pytest

from llmload.sink.csvlog import CsvLog
from llmload.sink.diskfull import RESERVE_NAME, WriteGuard, write_all


def test_writes_to_a_full_disk_stop_once_and_count_every_row(tmp_path):
    (tmp_path / "samples.csv").symlink_to("/dev/full")
    guard, lines = WriteGuard(), []
    guard.on_first = lines.append
    guard.reset(tmp_path)
    assert (tmp_path / RESERVE_NAME).stat().st_size > 0
    log = CsvLog(tmp_path / "samples.csv", ("a", "b"), flush_interval_s=0.0, guard=guard)  # its header fails
    for i in range(5):
        log.write({"a": i, "b": "x"})
    log.close()
    assert len(lines) == 1 and lines[0].startswith("llmload: disk full: writing samples.csv in ")
    assert guard.unwritten() == {"samples": 5} and log.rows == 0
    assert not (tmp_path / RESERVE_NAME).exists()  # freed for run.json and tiers.csv


def test_a_write_cut_short_by_the_limit_is_undone_not_left_half_written(tmp_path):
    """RLIMIT_FSIZE set 10 bytes above the file: the kernel writes 10 bytes of the row, then refuses (EFBIG);
    the file is cut back to whole rows (Python ignores SIGXFSZ, so the process lives on)."""
    path = tmp_path / "f.csv"
    path.write_text("head\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 10, hard))
        with pytest.raises(OSError) as info:
            write_all(fd, b"a row much longer than ten bytes\n")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        os.close(fd)
    assert info.value.errno == errno.EFBIG and path.read_text() == "head\n"
