"""How does TTFT grow with prompt length (prefill cost), and where does it stop being linear?

    locust -f scenarios/prefill_sweep.py --headless -u 1 -t 5m --max-context 32768

One user (low concurrency: no queueing in the figures) walks prompt lengths 128, 256, ...,
32k tokens in turn, capped so prompt + --max-tokens fit --max-context, each length its own
scenario label (`prefill-in512`). Lengths are exact with --tokenizer, else calibrated once
against the server's usage.prompt_tokens. The report fits TTFT = a + b x input tokens
(analysis/prefill.py): prefill ms per 1,000 tokens with its interval, and the length where
growth turns non-linear.
"""

import dataclasses

from locust import events, run_single_user

import llmload.scenario
from llmload.users import ChatUser
from llmload.workload.lengths import Lengths, sweep_lengths

llmload.scenario.install(events, shape_flags=False)


@events.init_command_line_parser.add_listener
def _defaults(parser):
    parser.set_defaults(max_tokens=1)  # TTFT is the question; one token keeps decode out of it


class PrefillSweep(ChatUser):
    scenario = "prefill"

    def workload_spec(self, spec):
        lengths = sweep_lengths(spec.max_context, self.opts.max_tokens)
        return dataclasses.replace(spec, input_tokens=Lengths("grid", values=lengths), output_tokens=None)


if __name__ == "__main__":
    run_single_user(PrefillSweep)
