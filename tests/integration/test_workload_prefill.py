"""The prefill sweep recovers the embedded server's configured prefill cost (analysis/prefill.py)."""

import dataclasses

import pandas as pd
import pytest

from llmload.analysis.tables.prefill import prefill_fit
from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser
from llmload.workload.lengths import Lengths, sweep_lengths
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration
MS_PER_TOKEN = 0.05


class Sweep(ChatUser):
    """scenarios/prefill_sweep.py's user (the scenario module registers on Locust's global events)."""

    scenario = "prefill"

    def workload_spec(self, spec):
        lengths = sweep_lengths(spec.max_context, self.opts.max_tokens)
        return dataclasses.replace(spec, input_tokens=Lengths("grid", values=lengths), output_tokens=None)


def test_sweep_recovers_the_servers_prefill_cost(tmp_path):
    server_args = ["--preset", "exact", "--prefill-base-ms", "5", "--prefill-ms-per-token", str(MS_PER_TOKEN)]
    with EmbeddedServer(server_args) as server:
        run_locally(Sweep, server.url, tmp_path / "run", ["--max-context", "4200", "--max-tokens", "1"],
                    users=1, seconds=5.0)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert {r["scenario"] for r in rows} == {f"prefill-in{n}" for n in (128, 256, 512, 1024, 2048, 4096)}
    fit = prefill_fit(pd.DataFrame(rows))
    assert fit is not None and fit.requests >= 30
    assert abs(fit.ms_per_1k - MS_PER_TOKEN * 1000) <= 0.1 * MS_PER_TOKEN * 1000
    assert fit.ms_per_1k_low <= fit.ms_per_1k <= fit.ms_per_1k_high and fit.nonlinear_from_tokens is None
