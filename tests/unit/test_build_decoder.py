"""The decoder's build script (llmload/client/build_decoder.py), on every machine: these tests need no compiled
module, so they run where the compiled decoder's own tests (test_decoder.py) skip."""

from __future__ import annotations

import os
import subprocess
import sys

from llmload.client import build_decoder, builder, decoder
from llmload.client.builder import StreamBuilder


def test_the_pure_decoder_can_be_forced_and_a_failed_build_says_so_in_one_line(tmp_path):
    code = "from llmload.client import builder, decoder; print(decoder.NAME, builder.StreamBuilder.feed.__name__)"
    env = dict(os.environ, LLMLOAD_PURE_DECODER="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["pure", "feed_pure"], done.stderr
    if decoder.compiled_module() is not None and not decoder.forced_pure():
        assert decoder.NAME == "compiled" and StreamBuilder.feed is builder.feed_compiled
    why = build_decoder.build(force=True, out=tmp_path / "x.so", compiler="/nonexistent/cc")
    assert why is not None and "\n" not in why and not (tmp_path / "x.so").exists()


def test_a_failed_build_is_an_error_where_the_decoder_is_required(monkeypatch, capsys):
    """.ci/run sets LLMLOAD_REQUIRE_DECODER: `make decoder` (build_decoder.main) then fails in one line instead of
    falling back, so the compiled decoder's tests cannot skip in CI. The installed build is left as it was."""
    before = build_decoder.target().stat().st_mtime if build_decoder.target().exists() else None
    monkeypatch.setenv("CC", "false")  # a compiler that always fails
    monkeypatch.setenv(build_decoder.REQUIRE_ENV, "1")
    assert build_decoder.main(["--force"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("llmload: compiled SSE decoder not built (the C compiler failed") and \
        "LLMLOAD_REQUIRE_DECODER is set" in err
    monkeypatch.delenv(build_decoder.REQUIRE_ENV)
    assert build_decoder.main(["--force"]) == 0  # a developer's machine: one line, the pure decoder
    assert capsys.readouterr().out.endswith("the pure-Python decoder will be used\n")
    after = build_decoder.target().stat().st_mtime if build_decoder.target().exists() else None
    assert after == before
