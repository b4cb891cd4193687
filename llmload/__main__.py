"""`python -m llmload COMMAND ...`: the same command line as the `llmload` console script (llmload/cli/)."""

import sys

from llmload.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
