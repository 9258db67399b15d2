"""A fetcher that never touches the network: for dry runs and tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sitesync.fetch.base import FetchOutcome, FetchResult
from sitesync.models import Validators


class NullFetcher:
    """Answers every URL with ``respond(url)``, or an empty 200 page.

    ``dry_run()`` answers ``not_fetched`` instead: the dry run of ``--fetcher null``, where
    seeds, robots.txt and sitemaps are walked for real (over plain HTTP) and every admitted
    URL that robots.txt allows ends as not fetched, without a request.
    """

    #: Nothing is requested: nothing to revalidate, nothing to keep.
    revalidates = False

    def __init__(self, respond: Callable[[str], FetchResult] | None = None) -> None:
        self._respond = respond

    @classmethod
    def dry_run(cls) -> NullFetcher:
        return cls(lambda url: FetchResult(url=url, outcome=FetchOutcome.NOT_FETCHED))

    async def __aenter__(self) -> NullFetcher:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def fetch(
        self,
        url: str,
        *,
        validators: Validators | None = None,  # nothing is requested: nothing to revalidate
        read_at_most: int | None = None,
    ) -> FetchResult:
        if self._respond is not None:
            result = self._respond(url)
            if read_at_most is not None and len(result.body) > read_at_most:
                return replace(result, body=result.body[:read_at_most])
            return result
        return FetchResult(
            url=url,
            outcome=FetchOutcome.SUCCESS,
            status=200,
            final_url=url,
            headers={"content-type": "text/html"},
        )
