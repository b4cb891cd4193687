"""Generator cost and timing accuracy: unpinned (default) or pinned.

    python -m bench generator                              # unpinned: 16/64/256/512 streams, 25 s each, + peers
    python -m bench generator --seconds 8 --streams 16,64  # quick unpinned run for development
    python -m bench generator --no-peers                   # without AIPerf / guidellm rows
    python -m bench generator --pinned [fast:256 ...]      # pinned: server and generator on cores of their own
    python -m bench generator --scaling [--streams 128]    # scaling: 1 process x C vs --processes 2 x 2C
    python -m bench generator --ladder [--streams 256] [--rounds 3] [--rungs llmload,https]  # CPU per chunk, by layer

Unpinned (generator/unpinned.py): llmload run by `locust` as a user runs it, beside a bare
reference client (reference_client.py) and peer tools, against the embedded server; writes
generator_unpinned.json / .md. Scaling (generator/scaling.py): one llmload process against
`--processes 2` with twice the streams; writes generator_scaling.json / .md. Pinned
(generator/pinned.py): one Locust process per transport and user count on a core of its own;
writes generator.json / .md. Ladder (generator/ladder.py): a bare gevent reader, llmload's
reactor reading, the reactor decoding, llmload, and llmload over https, in turn; writes generator_ladder.json / .md.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench generator", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)
    parser.add_argument("--pinned", action="store_true", help="the pinned mode (one generator on its own core)")
    parser.add_argument("--scaling", action="store_true",
                        help="scaling: 1 process x C streams vs --processes 2 x 2C (C from --streams, 128)")
    parser.add_argument("--ladder", action="store_true",
                        help="the CPU ladder: gevent floor, reactor, reactor + decode, llmload (--streams: one, 256)")
    parser.add_argument("--rounds", type=int, default=None, help="ladder: times each rung runs (default 3)")
    parser.add_argument("--rungs", default="", help="ladder: only these rungs, comma-separated (gevent, reactor, "
                                                    "decode, llmload, https)")
    parser.add_argument("--seconds", type=float, default=None, help="unpinned: seconds per run (default 25)")
    parser.add_argument("--streams", default=None, help="unpinned: stream counts, comma-separated (16,64,256,512)")
    parser.add_argument("--no-peers", action="store_true", help="unpinned: leave out AIPerf and guidellm")
    parser.add_argument("--clients", default="", help="unpinned: only these clients, comma-separated (reference, "
                                                      "llmload, llmload-https, llmload-pure, aiperf, guidellm)")
    parser.add_argument("specs", nargs="*", help="pinned: transport:users pairs (fast:256 openai:64)")
    return parser.parse_args(argv)


def main(results_dir: Path, argv: list[str] | None = None) -> None:
    args = parse(argv or [])
    if args.pinned:
        from bench.generator import pinned

        chosen = [(s.split(":")[0], int(s.split(":")[1])) for s in args.specs] or None
        pinned.main(Path(results_dir), chosen, repeats=1 if chosen else pinned.REPEATS)
        return
    if args.ladder:
        from bench.generator import ladder

        rungs = tuple(name.strip() for name in args.rungs.split(",") if name.strip()) or ladder.RUNGS
        unknown = sorted(set(rungs) - set(ladder.RUNGS))
        if unknown:
            raise SystemExit(f"--rungs: unknown {', '.join(unknown)}; the rungs are {', '.join(ladder.RUNGS)}")
        ladder.run_ladder(Path(results_dir), int(args.streams.split(",")[0]) if args.streams else ladder.STREAMS,
                          args.seconds or ladder.SECONDS, args.rounds or ladder.ROUNDS, rungs=rungs)
        return
    if args.scaling:
        from bench.generator import scaling

        streams = int(args.streams.split(",")[0]) if args.streams else scaling.STREAMS
        scaling.run_scaling(Path(results_dir), streams, args.seconds or scaling.SECONDS)
        return
    from bench.generator import unpinned

    streams = tuple(int(s) for s in args.streams.split(",")) if args.streams else unpinned.STREAMS
    only = tuple(name.strip() for name in args.clients.split(",") if name.strip())
    unpinned.run_all(Path(results_dir), streams, args.seconds or unpinned.SECONDS, peers=not args.no_peers, only=only)
