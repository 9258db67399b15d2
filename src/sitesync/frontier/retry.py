"""How long a failed task waits before its next attempt."""

from __future__ import annotations

from dataclasses import dataclass

import tenacity

from sitesync.config import setting_default


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter, expressed with tenacity's wait strategy.

    The attempt count lives in the frontier (a retried task goes back to PENDING with a
    next-eligible time), so the policy only answers "how long after attempt N".
    """

    initial: float = setting_default("retry_backoff")
    maximum: float = setting_default("retry_backoff_max")
    jitter: float = 1.0  # at most a second, and never more than the first wait (engine/wiring.py)

    def delay(self, attempt: int) -> float:
        wait = tenacity.wait_exponential_jitter(
            multiplier=self.initial, max=self.maximum, jitter=self.jitter
        )
        state = tenacity.RetryCallState(
            retry_object=tenacity.Retrying(), fn=None, args=(), kwargs={}
        )
        state.attempt_number = max(1, attempt)
        return float(wait(state))
