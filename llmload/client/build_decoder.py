"""Build the compiled SSE decoder in place: `python -m llmload.client.build_decoder` (`make setup` runs it).

How it works: compiles `_ssedecode.c` with the C compiler and flags Python itself was built with
(sysconfig: CC, the include directory, the extension suffix) into
`llmload/client/_ssedecode<suffix>.so`, through a temporary file renamed over the old build (a
running process keeps the one it loaded), then imports it to check it. Nothing to do when the
build is newer than the source. Any failure (no compiler, no Python headers, a refused import)
prints one line and exits 0: llmload then runs the pure-Python decoder (client/decoder.py); with
$LLMLOAD_REQUIRE_DECODER set (CI) it exits 1 instead, so the compiled decoder's tests never skip there.
`--force` rebuilds. The module is plain C through the Python C API, one file: packaging can
build it the same way as an optional setuptools `Extension("llmload.client._ssedecode", ...)`.
"""

from __future__ import annotations

import importlib
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_ssedecode.c"
FLAGS = ("-O2", "-shared", "-fPIC", "-Wall")


def target() -> Path:
    return HERE / f"_ssedecode{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def compile_command(out: Path, compiler: str | None = None) -> list[str]:
    """The compiler ($CC, else Python's own) with its flags, the Python headers, the source, `out`."""
    cc = shlex.split(compiler or os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    return [*cc, *FLAGS, f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(out)]


def build(force: bool = False, out: Path | None = None, compiler: str | None = None) -> str | None:
    """Build (when needed) and check the module; None when it is ready, else why it is not (one line).
    `out` (default: the module's place in the package) other than that place is built, not imported."""
    installed = out is None
    out = out or target()
    if not force and out.exists() and out.stat().st_mtime >= SOURCE.stat().st_mtime:
        return None
    partial = out.with_name(out.name + ".tmp")
    try:
        done = subprocess.run(compile_command(partial, compiler), capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run the C compiler: {exc}"
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip()[:200])
        return f"the C compiler failed: {first or f'exit code {done.returncode}'}"
    os.replace(partial, out)
    if not installed:
        return None
    try:
        importlib.import_module("llmload.client._ssedecode")
    except ImportError as exc:
        out.unlink(missing_ok=True)
        return f"the built module does not load: {exc}"
    return None


REQUIRE_ENV = "LLMLOAD_REQUIRE_DECODER"
"""set (CI sets it, .ci/run): a failed build is an error (exit 1), not a fallback, so its tests never skip"""


def main(argv: list[str]) -> int:
    why = build(force="--force" in argv)
    if why is None:
        return 0
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        print(f"llmload: compiled SSE decoder not built ({why}); {REQUIRE_ENV} is set, so the build must succeed "
              "(gcc and the Python headers)", file=sys.stderr)
        return 1
    print(f"llmload: compiled SSE decoder not built ({why}); the pure-Python decoder will be used")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
