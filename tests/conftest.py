import pytest

from llmload import tierstate


@pytest.fixture(autouse=True)
def _fresh_tier_timeline():
    """Each test starts with no tier timeline (module state shared by shapes and samples)."""
    tierstate.reset()
    yield
    tierstate.reset()
