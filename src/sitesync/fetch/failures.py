"""What a failed request means: the exception aiohttp raised, as an outcome and one line."""

from __future__ import annotations

import aiohttp

from sitesync.fetch.base import FetchOutcome
from sitesync.fetch.netpolicy import forbidden_cause


def request_failure(exc: BaseException, connect_timeout: float) -> tuple[FetchOutcome, str]:
    """The outcome and error of a request that raised ``exc``, the most specific case first."""
    if isinstance(exc, aiohttp.ClientPayloadError):
        if "not completed" in str(exc):
            # The connection broke before the body was whole: a network failure, worth
            # another attempt.
            return FetchOutcome.UNREACHABLE, f"truncated body (connection broke mid-body): {exc}"
        return FetchOutcome.INVALID, f"corrupt body: {exc}"
    if isinstance(exc, aiohttp.InvalidURL):
        return FetchOutcome.INVALID, f"invalid URL: {exc}"
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        # No connection at all (the host drops what it is sent): a host-level failure, like
        # a refused one, that counts towards a dead host; a timeout after the host accepted
        # says nothing about the host and stays TIMEOUT.
        error = f"cannot connect: no answer to the connection within {connect_timeout:g}s"
        return FetchOutcome.UNREACHABLE, error
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return FetchOutcome.TIMEOUT, "timed out waiting for the server"
    if isinstance(exc, aiohttp.ClientConnectorError):
        refused = forbidden_cause(exc)
        if refused is not None:
            return FetchOutcome.FORBIDDEN_ADDRESS, str(refused.strerror)
        return FetchOutcome.UNREACHABLE, f"cannot connect: {exc}"
    reason = str(exc) or type(exc).__name__
    return FetchOutcome.UNREACHABLE, f"connection failed: {reason}"
