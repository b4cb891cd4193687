"""The per-read decode alone: the embedded server's wire bytes through llmload's read step, compiled vs pure.

    python -m bench decoder                      # both decoders, ROUNDS rounds in turn -> results/decoder.json/.md
    python -m bench decoder --streams 500 --only pure   # one decoder once: a fixed work to time from outside

How it works: builds the bytes the embedded server sends for one streamed chat answer (llmload/server/wire.py:
headers, a role-only chunk, CHUNKS content chunks of one token, the finish chunk, `[DONE]`, HTTP chunked framing),
one socket read per SSE event, as the reactor sees them at 100 tokens/s. Each round folds STREAMS such answers,
read by read, into fresh builders through each decoder in turn:

- compiled: `body_lines.consumer` (client/_ssedecode.c's `consume`) and the compiled `StreamBuilder.feed`;
- pure: `body_lines.pure_consumer` and `StreamBuilder.feed_pure` (what LLMLOAD_PURE_DECODER=1 runs).

Each takes the process's CPU (time.process_time) per text chunk; the median of the rounds is reported, with the
range. No sockets, no event loop, no Locust: the decode of a read, without the read itself (kstamp.recv) or
the per-request work; the generator benchmark measures the whole process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from geventhttpclient.response import HTTPResponse

from llmload.client import body_lines, decoder, ghc_compat
from llmload.client.builder import StreamBuilder
from llmload.client.timing import StreamTiming
from llmload.server.wire import DONE, LAST_FRAME, ChunkTemplates, frame, stream_head

CHUNKS = 100
STREAMS = 2000
ROUNDS = 5


def answer_reads(chunks: int = CHUNKS) -> list[bytes]:
    """One streamed chat answer as the embedded server frames it, one read per event (the headers with the first)."""
    t = ChunkTemplates(True, "chatcmpl-bench-0", 1700000000, "demo-model", False)
    events = [t.role, *(t.content(f" tok{i}") for i in range(chunks)), t.finish("length"), DONE]
    reads = [frame(e) for e in events]
    reads[0] = stream_head({}, True) + reads[0]
    reads[-1] += LAST_FRAME
    return reads


def fold(reads: list[bytes], streams: int, pure: bool) -> float:
    """CPU seconds to fold `streams` answers through one decoder."""
    make = body_lines.pure_consumer if pure else body_lines.consumer
    started = time.process_time()
    for _ in range(streams):
        resp = HTTPResponse(method="POST")
        ghc_compat.direct_body(resp)
        builder = StreamBuilder(StreamTiming())
        consume = make(resp, builder.feed_pure if pure else builder.feed, [])
        for i, data in enumerate(reads):
            if consume(i * 0.01, data):
                break
    return time.process_time() - started


def run(streams: int, rounds: int, names: tuple[str, ...]) -> dict:
    reads = answer_reads()
    fold(reads, 50, pure=True)  # warm both paths
    fold(reads, 50, pure=False)
    per_chunk: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            per_chunk[name].append(fold(reads, streams, pure=name == "pure") / (streams * CHUNKS) * 1e6)
    rows = [{"decoder": name, "rounds": rounds, "median_us_per_chunk": round(statistics.median(v), 2),
             "min_us": round(min(v), 2), "max_us": round(max(v), 2)} for name, v in per_chunk.items()]
    return {"streams": streams, "chunks_per_stream": CHUNKS, "reads_per_stream": len(reads), "rounds": rounds,
            "when": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows}


def report(result: dict) -> str:
    lines = ["| decoder | rounds | CPU µs per chunk (median) | range |", "|---|---|---|---|"]
    lines += [f"| {r['decoder']} | {r['rounds']} | {r['median_us_per_chunk']:g} | {r['min_us']:g}-{r['max_us']:g} |"
              for r in result["rows"]]
    return (f"# The per-read decode, compiled vs pure Python\n\n{result['when']}: {result['streams']} answers of "
            f"{result['chunks_per_stream']} one-token chunks ({result['reads_per_stream']} reads each) per round, "
            f"through each decoder in turn, {result['rounds']} rounds (bench/bench_decoder.py).\n\n"
            + "\n".join(lines) + "\n")


def main(results_dir: Path, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench decoder", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)
    parser.add_argument("--streams", type=int, default=STREAMS, help="answers per round")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--only", choices=("compiled", "pure"), help="one decoder, one round, no results file")
    args = parser.parse_args(argv or [])
    if decoder.MODULE is None and args.only != "pure":
        raise SystemExit(f"the compiled decoder is not in use ({decoder.WHY})")
    if args.only:
        print(json.dumps(run(args.streams, 1, (args.only,))["rows"][0]))
        return
    result = run(args.streams, args.rounds, ("compiled", "pure"))
    print(json.dumps(result["rows"]))
    (results_dir / "decoder.json").write_text(json.dumps(result, indent=2) + "\n")
    (results_dir / "decoder.md").write_text(report(result))
