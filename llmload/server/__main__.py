"""`python -m llmload.server`: the embedded OpenAI-compatible simulated inference server."""

import sys

from llmload.server.config import ConfigError, config_from_args
from llmload.server.serve import run


def main(argv: list[str] | None = None) -> int:
    try:
        cfg = config_from_args(argv)
    except ConfigError as exc:
        print(f"llmload-server: {exc}", file=sys.stderr)
        return 2
    return run(cfg)


if __name__ == "__main__":
    sys.exit(main())
