"""Peer tools as rows of the unpinned table: NVIDIA AIPerf and guidellm, each in its own venv.

How it works: `python -m bench.generator.peers install` creates `~/.cache/llmload-bench-peers/
<tool>-venv` per tool and pip-installs it there from the package index (never into the
project's .venv: guidellm alone pulls torch and several GB). The unpinned bench then runs
each installed tool like the other clients (a fresh server, C concurrent streams, the same
duration, 100 output tokens), and reads its per-request records:

- AIPerf (`aiperf profile --streaming --concurrency C --benchmark-duration S`): records in
  profile_export.jsonl carry the `X-Request-Id` it sent (`metadata.x_request_id`), which the
  server's truth log keeps, and `time_to_first_token` per request;
- guidellm (`guidellm run --profile kind=concurrent,streams=C --constraint max_duration`): the
  per-request stats in its JSON carry the server's completion id (`chatcmpl-<request_id>`) and
  `time_to_first_token_ms`.

So both are compared to the truth request by request, as the reference and llmload are. Both
need a tokenizer for their synthetic prompts and, offline, cannot fetch one: `tokenizer_dir`
trains a small byte-level BPE tokenizer locally (the peer venv's `tokenizers`), saved as a
Hugging Face tokenizer folder they load by path. Neither exposes its event-loop lag; both run
several processes, so their CPU is that of the whole process tree. A tool that is not
installed, or whose tokenizer cannot be built, becomes a note under the table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.generator.unpinned import Client

PEERS_HOME = Path.home() / ".cache" / "llmload-bench-peers"
TOOLS = ("aiperf", "guidellm")
INSTALL_TIMEOUT_S = 900
TOKENIZER_SCRIPT = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>", "</s>", "<unk>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator([sys.argv[2]] * 20, trainer)
PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                        unk_token="<unk>").save_pretrained(sys.argv[1])
"""


def tool_bin(tool: str) -> Path:
    return PEERS_HOME / f"{tool}-venv" / "bin" / tool


def tokenizer_dir(tool: str) -> Path:
    """A local Hugging Face tokenizer folder for `tool` (built once with its venv's python)."""
    folder = PEERS_HOME / f"{tool}-tokenizer"
    if not (folder / "tokenizer.json").exists():
        from llmload.workload.words import WORDS

        python = tool_bin(tool).parent / "python"
        subprocess.run([str(python), "-c", TOKENIZER_SCRIPT, str(folder), " ".join(WORDS)], check=True,
                       capture_output=True, timeout=120)
    return folder


def aiperf_client(max_tokens: int, tokenizer: Path) -> Client:
    def command(url: str, streams: int, seconds: float, work: Path) -> list[str]:
        return [str(tool_bin("aiperf")), "profile", "--model", "llmload-sim", "--url", url, "--endpoint-type", "chat",
                "--streaming", "--concurrency", str(streams), "--benchmark-duration", f"{seconds:g}",
                "--output-tokens-mean", str(max_tokens), "--use-legacy-max-tokens", "--tokenizer", str(tokenizer),
                "--ui-type", "none", "--artifact-dir", str(work / "artifacts")]

    def samples(work: Path) -> list[dict]:
        rows = []
        with open(work / "artifacts" / "profile_export.jsonl") as f:
            for line in f:
                record = json.loads(line)
                meta, metrics = record.get("metadata", {}), record.get("metrics", {})
                ttft = metrics.get("time_to_first_token", {}).get("value")
                rows.append({"request_id": meta.get("x_request_id", ""), "ttft_ms": ttft, "loop_lag_ms": None,
                             "chunks": None,  # its token counts use our stand-in tokenizer: the truth log's
                             "ok": ttft is not None and not record.get("error") and not meta.get("was_cancelled")})
        return rows

    return Client("aiperf", command, samples, tree=True, note="AIPerf; loop lag not exposed")


def guidellm_client(max_tokens: int, tokenizer: Path) -> Client:
    def command(url: str, streams: int, seconds: float, work: Path) -> list[str]:
        return [str(tool_bin("guidellm")), "run", "--backend",
                f"kind=openai_http,target={url},request_format=/v1/chat/completions",
                "--profile", f"kind=concurrent,streams={streams}",
                "--constraint", f"kind=max_duration,seconds={seconds:g}",
                "--data", f"kind=synthetic_text,prompt_tokens=128,output_tokens={max_tokens}",
                "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
                "--output", f"kind=json,path={work / 'guidellm.json'}", "--disable-progress"]

    def samples(work: Path) -> list[dict]:
        requests = json.loads((work / "guidellm.json").read_text())["benchmarks"][0]["requests"]
        rows = []
        for kind in ("successful", "errored"):
            for stats in requests.get(kind) or []:
                rows.append({"request_id": (stats.get("response_id") or "").removeprefix("chatcmpl-"),
                             "ttft_ms": stats.get("time_to_first_token_ms"), "loop_lag_ms": None,
                             "chunks": None, "ok": kind == "successful"})  # as for AIPerf: the truth log's
        return rows

    return Client("guidellm", command, samples, tree=True, note="guidellm; loop lag not exposed")


BUILDERS = {"aiperf": aiperf_client, "guidellm": guidellm_client}


def available_peers(max_tokens: int) -> tuple[list[Client], list[str]]:
    """The installed peers as clients, and one note per tool left out (why)."""
    clients, notes = [], []
    for tool in TOOLS:
        if not tool_bin(tool).exists():
            notes.append(f"{tool}: skipped, not installed in {tool_bin(tool).parent.parent} "
                         f"(`python -m bench.generator.peers install`)")
            continue
        try:
            clients.append(BUILDERS[tool](max_tokens, tokenizer_dir(tool)))
        except (OSError, subprocess.SubprocessError) as exc:
            notes.append(f"{tool}: skipped, no local tokenizer could be built ({type(exc).__name__})")
    return clients, notes


def install(tools: tuple[str, ...] = TOOLS) -> int:
    """Create each tool's venv and pip-install it from the package index (bounded in time)."""
    failed = 0
    for tool in tools:
        venv = PEERS_HOME / f"{tool}-venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        try:
            done = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", tool], timeout=INSTALL_TIMEOUT_S)
            failed += done.returncode != 0
        except subprocess.TimeoutExpired:
            print(f"{tool}: pip install took over {INSTALL_TIMEOUT_S} s; stopped", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["install"]:
        sys.exit("usage: python -m bench.generator.peers install [aiperf] [guidellm]")
    sys.exit(install(tuple(sys.argv[2:]) or TOOLS))
