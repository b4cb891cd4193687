"""What a reconnect costs inside TTFT over https: a resumed TLS session against a full handshake.

    python -m bench tls                    # 200 requests per mode
    python -m bench tls --requests 50      # quick

A server or proxy that closes kept-alive connections (nginx's keepalive_requests, an idle close) makes the next
request open a new connection inside its TTFT. The embedded server with `--keepalive-requests 1` closes every
connection after its answer, so every request here reconnects. One user (one FastTransport) sends the requests one
after the other, twice: resuming its last TLS session (the default: llmload/client/tlsresume.py), then as a new
client each time (`Connection: close`, --new-connection-per-request: a full handshake). Per mode: the handshakes
(full, resumed), connect_ms (TCP + TLS) p50 / p99, and the part of the client's TTFT the server's own TTFT
(truth log: first content byte written minus request arrival, after the handshake) does not hold, p50 / p99.
Writes results/tls.json and results/tls.md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench.generator.common import machine_facts, pcts, read_truth, self_signed, truth_ttft_ms

SERVER_ARGS = ("--preset", "exact", "--prefill-base-ms", "20", "--decode-ms-per-token", "2", "--keepalive-requests",
               "1")


def one_mode(base_url: str, cert: Path, requests: int, new_client: bool, tag: str) -> tuple[dict, list]:
    from llmload.client.fast import FastTransport
    from llmload.client.request import StreamRequest

    transport = FastTransport(base_url, ca_bundle=str(cert), headers={"Connection": "close"} if new_client else None)
    results = []
    for i in range(requests):
        results.append(transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=4,
                                                      request_id=f"{tag}-{i}")))
        time.sleep(0.01)  # the server's close lands before the next request
    transport.close()
    return {"handshakes_full": transport.tickets.full, "handshakes_resumed": transport.tickets.resumed}, results


def summarize(counts: dict, results: list, truth: dict) -> dict:
    ok = [r for r in results if r.ok and r.timing is not None and r.timing.ttft_ms is not None]
    connect = [r.connect_ms for r in ok if r.connect_ms is not None]
    outside = [r.timing.ttft_ms - truth_ttft_ms(truth[r.request_id]) for r in ok if r.request_id in truth]
    c50, c99, _ = pcts(connect)
    o50, o99, _ = pcts(outside)
    return {**counts, "requests": len(results), "ok": len(ok), "connect_ms_p50": c50, "connect_ms_p99": c99,
            "ttft_outside_server_ms_p50": o50, "ttft_outside_server_ms_p99": o99}


def main(results_dir: Path, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench tls", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)
    parser.add_argument("--requests", type=int, default=200, help="requests per mode (default 200)")
    args = parser.parse_args(argv or [])
    from gevent import monkey

    monkey.patch_all()  # the fast transport is gevent's (as under Locust)
    from llmload.server.launch import EmbeddedServer

    out: dict = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_facts(), "server_args": SERVER_ARGS,
                 "requests_per_mode": args.requests, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        pair = self_signed(Path(tmp))
        if pair is None:
            out["skipped"] = "no openssl command to make a certificate"
        else:
            cert, key = pair
            truth_path = Path(tmp) / "truth.csv"
            with EmbeddedServer([*SERVER_ARGS, "--tls-cert", str(cert), "--tls-key", str(key), "--truth-log",
                                 str(truth_path)]) as server:
                modes = [(name, *one_mode(server.base_url, cert, args.requests, new_client, name))
                         for name, new_client in (("resumed", False), ("full", True))]
            time.sleep(0.2)  # the server's last truth rows are flushed on exit
            truth = read_truth(truth_path)
            out["rows"] = [{"mode": name, **summarize(counts, results, truth)} for name, counts, results in modes]
    (results_dir / "tls.json").write_text(json.dumps(out, indent=2) + "\n")
    (results_dir / "tls.md").write_text(to_markdown(out))
    print(to_markdown(out))


def to_markdown(out: dict) -> str:
    if out.get("skipped"):
        return f"TLS reconnect bench skipped: {out['skipped']}\n"
    lines = ["| mode | requests | handshakes full / resumed | connect p50 ms | p99 ms | TTFT outside the server's "
             "p50 ms | p99 ms |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in out["rows"]:
        lines.append(f"| {r['mode']} | {r['ok']} / {r['requests']} | {r['handshakes_full']} / "
                     f"{r['handshakes_resumed']} | {r['connect_ms_p50']} | {r['connect_ms_p99']} | "
                     f"{r['ttft_outside_server_ms_p50']} | {r['ttft_outside_server_ms_p99']} |")
    return "\n".join(lines) + f"\n\n{out['when']}, every request on a new connection (--keepalive-requests 1).\n"
