"""A user's request that raised: logged once per kind, counted by Locust, secrets never shown, then a pause.

`crashed(user, exc)` is what users.py does with an exception that escapes a request instead of letting
Locust log it with its traceback every time (run/failures/repeats.py): the message and traceback are redacted
(the API key and every header value, as given or escaped), Locust's `user_error` event gets an exception
carrying the redacted message (its Exceptions tab and exceptions.csv count it), and the user pauses
CRASH_PAUSE_S so a run whose every request fails this way idles instead of spinning.
"""

from __future__ import annotations

import traceback
from typing import Any

from llmload.run.options.knobs import redact, secrets_of

CRASH_PAUSE_S = 1.0


class RequestCrashed(Exception):
    """The redacted form of an exception a request raised."""


def crashed(user: Any, exc: Exception) -> None:
    opts = getattr(user, "opts", None)
    secrets = secrets_of(opts.api_key, opts.headers) if opts is not None else []
    message = redact(f"{type(exc).__name__}: {exc}", secrets)
    user.ctx.repeats.report(message, redact(traceback.format_exc(), secrets))
    user.environment.events.user_error.fire(user_instance=user, exception=RequestCrashed(message),
                                            tb=exc.__traceback__)
    user._pause(CRASH_PAUSE_S)
