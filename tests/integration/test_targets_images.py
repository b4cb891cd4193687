"""Two targets in one run against two embedded servers, and images in chat, through both transports.

One short run per case (module-scoped): the servers' truth logs say what each one served.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from llmload.analysis.read.run import load_run
from llmload.analysis.report.targets import comparison_sentence
from llmload.analysis.tables import splits, targets
from llmload.run.options.targets import label_of
from llmload.server.images import image_tokens
from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration
FAST_PREFILL_MS, SLOW_PREFILL_MS = 5, 60


class Chat(ChatUser):
    scenario = "chat"
    prompt_tokens = 16
    max_tokens = 4


@pytest.fixture(scope="module")
def two_targets(tmp_path_factory):
    """Four users, weights 3,1, fast/slow prefill: the slow server is the first target."""
    tmp = tmp_path_factory.mktemp("targets")
    servers = []
    for name, prefill_ms in (("slow", SLOW_PREFILL_MS), ("fast", FAST_PREFILL_MS)):
        server = EmbeddedServer(["--preset", "exact", "--slots", "64", "--prefill-base-ms", str(prefill_ms),
                                 "--decode-ms-per-token", "1", "--truth-log", str(tmp / f"{name}.csv")]).start()
        servers.append(server)
    try:
        hosts = ",".join(s.url for s in servers)
        run_locally(Chat, hosts, tmp / "run", ["--host-weights", "1,3"], users=4, seconds=2.5)
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    return tmp, servers


def test_each_target_gets_its_weight_and_every_row_names_it(two_targets):
    tmp, (slow, fast) = two_targets
    rows = read_csv(tmp / "run" / "samples.csv")
    per_target = Counter(r["target"] for r in rows)
    assert set(per_target) == {label_of(slow.url + "/v1"), label_of(fast.url + "/v1")}
    for server, name in ((slow, "slow"), (fast, "fast")):
        truth = read_csv(tmp / f"{name}.csv")
        assert per_target[label_of(server.url)] == len(truth)  # every answered request is one row of its target
    # smooth weighted round robin per process: 1:3 within one request per cycle of 4
    n_slow, n_fast = per_target[label_of(slow.url)], per_target[label_of(fast.url)]
    assert abs(3 * n_slow - n_fast) <= 4 and n_slow >= 5


def test_the_report_names_the_faster_target(two_targets):
    tmp, (slow, fast) = two_targets
    run = load_run(tmp / "run")
    comparisons = targets.faster(run)
    assert len(comparisons) == 1
    c = comparisons[0]
    assert (c.fastest, c.other) == (label_of(fast.url), label_of(slow.url))
    assert c.p50.told and c.p50.low_ms > 0.5 * (SLOW_PREFILL_MS - FAST_PREFILL_MS) - 5
    frame = targets.target_table(run)
    assert set(frame["target"]) == {c.fastest, c.other} and (frame["attempts"] > 0).all()
    assert comparison_sentence(c).startswith(f"{c.fastest} is faster than {c.other}: TTFT p50 ")


@pytest.fixture(scope="module", params=["fast", "openai"])
def images_run(request, tmp_path_factory):
    """One user, 0, 1 or 3 images of 224x224 per request."""
    tmp = tmp_path_factory.mktemp(f"images-{request.param}")
    server = EmbeddedServer(["--preset", "exact", "--prefill-base-ms", "2", "--prefill-ms-per-token", "0.2",
                             "--decode-ms-per-token", "1", "--truth-log", str(tmp / "truth.csv")]).start()
    try:
        run_locally(Chat, server.url, tmp / "run", ["--images", "0,1,3", "--image-size", "224x224", "--seed", "7",
                                                    "--transport", request.param], users=1, seconds=1.5)
    finally:
        server.__exit__(None, None, None)
    return tmp


def test_images_are_prompt_tokens_and_ttft_grows_with_them(images_run):
    rows = pd.DataFrame(read_csv(images_run / "run" / "samples.csv"))
    truth = pd.DataFrame(read_csv(images_run / "truth.csv")).set_index("request_id")
    rows = rows[rows["error"] == ""]
    assert set(rows["images"]) == {"0", "1", "3"}
    per_image = image_tokens(224, 224)
    joined = rows.merge(truth, left_on="request_id", right_index=True, suffixes=("", "_truth"))
    assert (joined["images"] == joined["images_truth"]).all()
    assert (joined["image_tokens"].astype(int) == joined["images"].astype(int) * per_image).all()
    assert (joined["input_tokens"].astype(int) == joined["prompt_tokens"].astype(int)).all()
    ttft = rows.assign(ttft=rows["ttft_ms"].astype(float)).groupby("images")["ttft"].median()
    # 0.2 ms per prompt token: 3 images are 3 * 64 tokens = ~38 ms more prefill than none
    assert ttft["0"] < ttft["1"] < ttft["3"] and ttft["3"] - ttft["0"] > 0.5 * 0.2 * 3 * per_image
    table = splits.image_table(load_run(images_run / "run"))
    assert set(table["images"]) >= {1, 3}
