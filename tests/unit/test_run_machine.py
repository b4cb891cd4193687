"""The machine's CPU load from /proc (run/watch/machine.py), read from small fixture files, and absent files."""

from __future__ import annotations

from pathlib import Path

from llmload.run.watch.machine import MachineSampler, read_loadavg_running, read_pressure, read_stat

PRESSURE = "some avg10={avg:.2f} avg60=1.46 avg300=2.70 total={total}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
STAT = ("cpu  {user} 0 100 {idle} 0 0 0 {steal} 0 0\ncpu0 1 0 1 1 0 0 0 0 0 0\nintr 1 2 3\n"
        "procs_running {running}\nprocs_blocked 0\n")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_readers_parse_the_kernel_formats(tmp_path):
    pressure = _write(tmp_path / "pressure", PRESSURE.format(avg=3.61, total=1003786415))
    stat = _write(tmp_path / "stat", STAT.format(user=900, idle=8000, steal=1000, running=3))
    assert read_pressure(pressure) == (3.61, 1003786415)
    assert read_stat(stat) == ((1000, 900 + 100 + 8000 + 1000), 3)
    assert read_loadavg_running(_write(tmp_path / "loadavg", "0.42 0.96 0.95 4/104 23934\n")) == 4


def test_absent_or_odd_files_give_nothing(tmp_path):
    missing = tmp_path / "nope"
    assert read_pressure(missing) is None and read_stat(missing) == (None, None)
    assert read_loadavg_running(missing) is None
    assert read_pressure(_write(tmp_path / "p", "full avg10=0.00 total=0\n")) is None  # no 'some' line
    assert read_pressure(_write(tmp_path / "q", "some avg10=x total=1\n")) is None
    sampler = MachineSampler(missing, missing, missing, cpu_count=2)
    assert sampler.sample(0.0) == sampler.sample(1.0) == {
        "cpu_pressure_percent": None, "cpu_pressure_avg10": None, "steal_percent": None, "procs_running": None,
        "cpu_count": 2}


def test_sampler_turns_deltas_into_shares_of_the_second(tmp_path):
    pressure, stat, loadavg = tmp_path / "pressure", tmp_path / "stat", tmp_path / "loadavg"
    _write(loadavg, "3.10 1.00 0.50 5/120 999\n")
    sampler = MachineSampler(pressure, stat, loadavg, cpu_count=2)
    _write(pressure, PRESSURE.format(avg=1.0, total=10_000_000))
    _write(stat, STAT.format(user=1000, idle=9000, steal=0, running=1))
    first = sampler.sample(100.0)
    assert first["cpu_pressure_percent"] is None and first["steal_percent"] is None  # no delta yet
    assert first["cpu_pressure_avg10"] == 1.0 and first["procs_running"] == 1
    _write(pressure, PRESSURE.format(avg=40.0, total=10_000_000 + 640_000))  # 0.64 s stalled in 1 s
    _write(stat, STAT.format(user=1100, idle=9050, steal=50, running=4))  # 50 of 200 jiffies stolen
    second = sampler.sample(101.0)
    assert second == {"cpu_pressure_percent": 64.0, "cpu_pressure_avg10": 40.0, "steal_percent": 25.0,
                      "procs_running": 4, "cpu_count": 2}
    _write(stat, "cpu  1 2 3 4 5 6 7 8\n")  # a kernel without procs_running: /proc/loadavg's count
    assert sampler.sample(102.0)["procs_running"] == 5


def test_this_machine_reads_without_error():
    row = MachineSampler().sample(0.0)
    assert set(row) == {"cpu_pressure_percent", "cpu_pressure_avg10", "steal_percent", "procs_running", "cpu_count"}
