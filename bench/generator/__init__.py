"""The generator benchmark: pinned (one generator process on a core of its own) and unpinned
(llmload beside a bare reference client and optional peer tools, as a user runs them)."""
