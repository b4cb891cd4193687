import pytest

from llmload.server.launch import EmbeddedServer


@pytest.fixture
def embedded_server(tmp_path):
    """Factory: start the embedded server with the given flags; all are stopped at the end."""
    started = []

    def start(*args: str, truth_log: bool = True) -> EmbeddedServer:
        flags = list(args)
        if truth_log:
            flags += ["--truth-log", str(tmp_path / f"truth{len(started)}.csv")]
        server = EmbeddedServer(flags).start()
        server.truth_path = tmp_path / f"truth{len(started)}.csv" if truth_log else None
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)
