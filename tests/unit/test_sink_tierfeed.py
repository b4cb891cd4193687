"""The workers' replica of the master's tier timeline (sink/tierfeed.py)."""

from __future__ import annotations

from llmload.sink.tierfeed import TierReplica, feed_payload
from llmload.sink.timeline import Tier, Timeline


def test_the_replica_stamps_what_it_covers_and_holds_the_rest():
    master = Timeline()
    master.begin_tier(Tier(tier=1, start_s=100.0, warmup_s=2.0))
    replica = TierReplica()
    replica.update(feed_payload(master, now_s=101.0, offset_s=0.5))  # the worker's clock is 0.5 s ahead
    assert replica.stamp(101.2) == (1, "warmup")  # 100.7 on the master's clock
    assert replica.stamp(103.0) is None
    assert replica.stamp(101.6) is None  # after the master's "now": tier 2 may have begun since
    replica.hold(101.6, "late")
    master.begin_tier(Tier(tier=2, start_s=101.05, warmup_s=0.0))
    master.end_run(105.0)
    replica.update(feed_payload(master, now_s=106.0, offset_s=0.5))
    assert replica.release() == [("late", 2, "measure")]
    assert replica.stamp(105.6) == (2, "after")
    replica.hold(200.0, "never covered")
    assert replica.release() == [] and replica.release(final=True) == [("never covered", 2, "after")]
