"""`python -m analysis COMMAND RUN_DIR ...`: the analysis command line (llmload.analysis.cli)."""

import sys

from llmload.analysis.cli import main

if __name__ == "__main__":
    sys.exit(main())
