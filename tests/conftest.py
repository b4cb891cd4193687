import pytest

from llmload.shaping import timeline


@pytest.fixture(autouse=True)
def _fresh_tier_timeline():
    """Each test starts with no tier timeline (module state shared by shapes and samples)."""
    timeline.reset()
    yield
    timeline.reset()
