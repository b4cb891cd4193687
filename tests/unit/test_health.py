"""HealthMonitor's lag window and its gc.freeze once the user count is steady (no sockets, no loop)."""

import gc

import pytest

from llmload.run.watch.health import HealthMonitor, LagWindow


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_lag_window_summary():
    window = LagWindow()
    assert window.summary() == (None, None, None)
    for lag_ms in (0.5, 3.0, 1.0):
        window.add(lag_ms)
    lag_max, lag_p50, lag_p99 = window.summary()
    assert (lag_max, lag_p50) == (3.0, 1.0)
    assert lag_p99 == pytest.approx(2.96)  # interpolated between 1.0 and 3.0, as every percentile here
    assert window.max_ms == 3.0


def test_freezes_only_after_a_steady_window(unfrozen):
    users = [0, 4, 8, 8, 8, 9, 9]
    rows = []
    monitor = HealthMonitor("local", rows.append, users=lambda: users.pop(0), inflight=lambda: 0)
    frozen_after = []
    for _ in range(7):
        monitor._report()
        frozen_after.append(gc.get_freeze_count() > 0)
        gc.unfreeze()
    # 0 users: never; 4 then 8: still ramping; 8 held a whole window: freeze once; 9 held: again
    assert frozen_after == [False, False, False, True, False, False, True]
    assert [r["users"] for r in rows] == [0, 4, 8, 8, 8, 9, 9]
