"""Several targets and images in chat: the parsers, the round robin, the PNG generator, the server's image
count and the report's targets table, on real parsers and synthetic runs (no sockets)."""

from __future__ import annotations

import functools
import io
import json
import struct
import zlib
from collections import Counter
from types import SimpleNamespace

import pandas as pd
import pytest
from PIL import Image

from llmload.analysis.analyze import analyze
from llmload.analysis.read.run import load_run
from llmload.analysis.report.document import Bullets, Heading, Para, Table
from llmload.analysis.report.summary import dumps
from llmload.analysis.report.summary_schema import TARGETS
from llmload.analysis.report.targets import comparison_sentence, target_blocks
from llmload.analysis.synthetic import SimRun, SimServer, write_run
from llmload.analysis.tables import targets
from llmload.client.request import StreamRequest, StreamResult
from llmload.rules.slo import profile_from
from llmload.run.options.settings import OptionError, read_options
from llmload.run.options.targets import RoundRobin, TargetError, label_of, make_targets, parse_weights, split_hosts
from llmload.run.transport import SERVED_KEPT, TargetedTransport
from llmload.server.images import count_images, image_tokens, png_size
from llmload.workload.images import ImageError, ImagePool, data_uri, parse_images, png_bytes

A, B = "http://127.0.0.1:8001", "http://127.0.0.1:8002"


@functools.cache
def parser():
    """Locust's and llmload's options (built once: a parser costs ~0.3 s)."""
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

    from llmload.run.options.flags import add_options

    built = get_empty_argument_parser()
    setup_parser_arguments(built)
    add_options(built)
    return built


def options(*args: str):
    parsed = parser().parse_args(list(args))
    return read_options(SimpleNamespace(parsed_options=parsed, host=parsed.host))


def test_a_repeated_host_is_joined_and_read_as_targets_with_weights():
    assert parser().parse_args(["--host", A, "--host", B]).host == f"{A},{B}"
    assert parser().parse_args(["--host", A]).host == A
    opts = options("--host", A, "--host", B + "/v1", "--host-weights", "3,1")
    assert [(t.base_url, t.label, t.weight) for t in opts.targets] == [
        (A + "/v1", "127.0.0.1:8001", 3.0), (B + "/v1", "127.0.0.1:8002", 1.0)]
    assert opts.base_url == A + "/v1"
    assert [t.weight for t in options("--host", f"{A}, {B}").targets] == [1.0, 1.0]


@pytest.mark.parametrize(("args", "says"), [
    (("--host", A, "--host", B, "--host-weights", "1"), "1 weight(s) for 2 host(s)"),
    (("--host", A, "--host", B, "--host-weights", "1,0"), "must all be > 0"),
    (("--host", A, "--host", B, "--host-weights", "a,b"), "must be numbers"),
    (("--host", A, "--host", A), "is given twice"),
    (("--host", A, "--host", "ftp://x"), "--host must be an http(s) URL"),
    (("--host", A, "--images", "two"), "--images must be a count"),
    (("--host", A, "--images", "99"), "--images must be 0..32"),
    (("--host", A, "--images", "1", "--image-size", "512"), "--image-size must be WIDTHxHEIGHT"),
    (("--host", A, "--images", "1", "--image-size", "4x4"), "sides must be 8..2048"),
])
def test_bad_targets_and_images_are_one_line_errors(args, says):
    with pytest.raises(OptionError) as info:
        options(*args)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_labels_never_carry_user_info_or_query():
    assert label_of("https://user:sk-secret@api.example.com/v1?key=sk-2") == "api.example.com:443"
    assert label_of("http://gw:4000/proxy/v1") == "gw:4000/proxy/v1"
    assert split_hosts("") == [""] and split_hosts(f"{A},,{B} ") == [A, B]
    with pytest.raises(TargetError):
        make_targets([A + "/v1", A + "/v1/"], (1.0, 1.0))


def test_smooth_weighted_round_robin_is_exact_and_spread():
    rr = RoundRobin(parse_weights("3,1", 2))
    assert [rr.next() for _ in range(8)] == [0, 0, 1, 0, 0, 0, 1, 0]
    rr = RoundRobin(parse_weights("2,1,1", 3))
    picks = [rr.next() for _ in range(400)]
    assert Counter(picks) == {0: 200, 1: 100, 2: 100}
    assert all(picks[i:i + 2] != [1, 1] for i in range(len(picks) - 1))  # the light ones are spread out
    assert RoundRobin((1.0,)).next() == 0


def _chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    out, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + data) & 0xFFFFFFFF
        out.append((kind, data))
        at += 12 + length
    return out


def test_the_png_is_valid_seeded_and_sized():
    png = png_bytes(100, 37, seed=5)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    kinds = [kind for kind, _ in _chunks(png)]
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]
    assert len(zlib.decompress(_chunks(png)[1][1])) == (100 * 3 + 1) * 37
    image = Image.open(io.BytesIO(png))
    image.load()
    assert image.size == (100, 37) and image.mode == "RGB"
    assert len(image.getcolors(maxcolors=100 * 37) or []) > 50  # tiles and noise, not a flat colour
    assert png_bytes(100, 37, seed=5) == png and png_bytes(100, 37, seed=6) != png
    assert png_size(data_uri(png)) == (100, 37)


def test_the_pool_hands_seeded_images_and_counts():
    spec = parse_images("0,1,3", "64x48")
    first, again = ImagePool(spec, seed=3), ImagePool(spec, seed=3)
    draws = [first.next() for _ in range(60)]
    assert draws == [again.next() for _ in range(60)]
    assert Counter(len(d) for d in draws).keys() == {0, 1, 3}
    assert len({uri for d in draws for uri in d}) == 4  # the pool, built once
    assert ImagePool(parse_images("2", "16x16"), seed=3).next() != ImagePool(parse_images("2", "16x16"), seed=4).next()
    assert not parse_images("", "").active and not parse_images("0", "").active
    with pytest.raises(ImageError):
        parse_images("-1", "")


def test_images_ride_the_last_user_message_and_count_as_prompt_tokens():
    uri = data_uri(png_bytes(512, 512, 1))
    history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
               {"role": "assistant", "content": "hello"}, {"role": "user", "content": "look"}]
    req = StreamRequest(endpoint="chat", model="m", prompt="", max_tokens=4, request_id="r", messages=history,
                        images=(uri, uri))
    messages = req.body()["messages"]
    assert messages[3]["content"] == [{"type": "text", "text": "look"},
                                      {"type": "image_url", "image_url": {"url": uri}},
                                      {"type": "image_url", "image_url": {"url": uri}}]
    assert messages[:3] == history[:3] and history[3]["content"] == "look"  # the caller's list is not changed
    assert image_tokens(512, 512) == 19 * 19 and count_images(messages) == (2, 2 * 361)
    with pytest.raises(ValueError, match="data:image/png"):
        png_size("https://example.com/cat.png")
    with pytest.raises(ValueError, match="not a PNG"):
        png_size("data:image/png;base64," + "A" * 60)


@pytest.fixture(scope="module")
def two_target_run(tmp_path_factory):
    """A synthetic step run whose requests went to a fast and a slow target (the same tiers and loads)."""
    tmp = tmp_path_factory.mktemp("targets")
    run = SimRun(tiers_users=(1, 2, 4), tier_s=8.0)
    frames = []
    for name, prefill_ms in (("fast:1", 10.0), ("slow:2", 60.0)):
        write_run(tmp / name, SimServer(prefill_base_ms=prefill_ms), run)
        frames.append(pd.read_csv(tmp / name / "samples.csv").assign(target=name))
    both = pd.concat(frames).sort_values("ts_start_s", kind="stable")
    both["request_id"] = [f"r{i}" for i in range(len(both))]
    both.to_csv(tmp / "fast:1" / "samples.csv", index=False)
    return load_run(tmp / "fast:1")


def test_the_targets_table_and_the_faster_target(two_target_run):
    frame = targets.target_table(two_target_run)
    assert list(frame["target"][:2]) == ["fast:1", "slow:2"] and set(frame["tier"]) == {1, 2, 3}
    by = frame.set_index(["tier", "target"])
    for tier in (1, 2, 3):
        assert by.loc[(tier, "slow:2"), "ttft_p50_ms"] - by.loc[(tier, "fast:1"), "ttft_p50_ms"] > 40
    (c,) = targets.faster(two_target_run)
    assert (c.fastest, c.other) == ("fast:1", "slow:2") and c.p50.told and 40 < c.p50.low_ms < c.p50.high_ms < 60
    sentence = comparison_sentence(c)
    assert sentence.startswith("fast:1 is faster than slow:2: TTFT p50 ") and "95 % CI" in sentence


@pytest.fixture(scope="module")
def two_target_analysis(two_target_run):
    return analyze(two_target_run, profile_from("chat"))


def test_the_report_section_names_the_faster_target_and_judges_each(two_target_analysis):
    blocks = target_blocks(two_target_analysis)
    assert [b.text for b in blocks if isinstance(b, Heading)] == ["Targets side by side"]
    (table,) = [b for b in blocks if isinstance(b, Table)]
    assert [row[2] for row in table.rows] == ["fast:1", "slow:2"] * 3
    assert any(isinstance(b, Para) and b.text.startswith("fast:1 is faster than slow:2") for b in blocks)
    (verdicts,) = [b for b in blocks if isinstance(b, Bullets)]
    assert [lead for lead, _ in verdicts.items] == ["fast:1", "slow:2"]
    assert all("under the chat SLO" in line and "queueing onset" in line for _, line in verdicts.items)


def test_summary_json_holds_the_targets_as_its_schema_says(two_target_analysis):
    section = json.loads(dumps(two_target_analysis))["targets"]
    schema = TARGETS["properties"]
    assert set(section) == set(schema) and len(section["tiers"]) == 6
    assert set(section["tiers"][0]) == set(schema["tiers"]["items"]["properties"])
    (c,) = section["comparisons"]
    assert set(c) == set(schema["comparisons"]["items"]["properties"])
    assert (c["fastest"], c["other"]) == ("fast:1", "slow:2")
    assert c["ttft_p50"]["told"] and c["ttft_p50"]["diff_ms"] > 40


def test_two_alike_targets_are_not_told_apart(two_target_run):
    s = two_target_run.samples
    fast = s[s["target"] == "fast:1"]
    half = fast.assign(target=["a:1" if i % 2 else "b:2" for i in range(len(fast))])
    (c,) = targets.faster(dataclass_replace(two_target_run, samples=half))
    assert not c.p50.told and comparison_sentence(c).startswith("The run cannot tell")


def test_one_target_or_an_older_file_shows_no_targets_section(two_target_run):
    one = dataclass_replace(two_target_run, samples=two_target_run.samples.assign(target="fast:1"))
    older = dataclass_replace(two_target_run, samples=two_target_run.samples.drop(columns=["target"]))
    for run in (one, older):
        assert targets.target_table(run).empty and targets.faster(run) == []


def dataclass_replace(run, **fields):
    import dataclasses

    return dataclasses.replace(run, **fields)


class _Recording:
    """A transport that answers at once and says which target it is (the routing is what is tested)."""

    name = "recording"

    def __init__(self, label: str) -> None:
        self.label, self.seen = label, []

    def stream(self, req: StreamRequest) -> StreamResult:
        self.seen.append(req.request_id)
        return StreamResult(request_id=req.request_id, endpoint=req.endpoint, transport=self.name, ts_start_s=0.0)


def _req(request_id: str, retry_of: str = "") -> StreamRequest:
    return StreamRequest(endpoint="chat", model="m", prompt="p", max_tokens=1, request_id=request_id,
                         retry_of=retry_of)


def test_a_retry_goes_to_the_target_of_the_attempt_it_repeats():
    a, b = _Recording("a"), _Recording("b")
    transport = TargetedTransport([a, b], ["a", "b"], RoundRobin((1.0, 1.0)))
    assert transport.stream(_req("r1")).target == "a"
    retried = transport.stream(_req("r2", retry_of="r1"))
    assert retried.target == "a" and a.seen == ["r1", "r2"]  # not b, the next in turn
    assert transport.stream(_req("r3")).target == "b"
    for n in range(200):  # what it remembers stays bounded
        transport.stream(_req(f"x{n}"))
    assert len(transport.served) == SERVED_KEPT
