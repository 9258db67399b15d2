"""The pages of a generated site: their links (traps included) and their HTML."""

from __future__ import annotations

import random
from html import escape

from sitesync.testing.spec import OUT_OF_SCOPE_IPS, SiteSpec, page_path

_UTM_QUERY = "utm_source=x&utm_medium=y"

_FILLER_SENTENCE = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation. "
)


def _build_filler(size: int) -> bytes:
    """Paragraphs of prose at least ``size`` bytes long, built once and sliced per page."""
    paragraphs: list[str] = []
    total = 0
    n = 0
    while total < size:
        para = f"<p>{n}. {_FILLER_SENTENCE * 4}</p>\n"
        paragraphs.append(para)
        total += len(para)
        n += 1
    return "".join(paragraphs).encode()


class Pages:
    """Renders pages of one site on one port. Cheap per call: a small join plus a filler slice."""

    def __init__(self, spec: SiteSpec, port: int) -> None:
        self.spec = spec
        self.port = port
        self._filler_view = memoryview(_build_filler(spec.page_bytes))

    def origin(self, host_index: int) -> str:
        return f"http://{self.spec.ip(host_index)}:{self.port}"

    def links(self, h: int, i: int) -> tuple[list[str], list[str], list[str]]:
        """The hrefs of page ``i`` of host ``h``, as (nav, main, footer)."""
        spec = self.spec
        n = spec.pages_per_host
        # An integer seed: string/tuple seeding would depend on PYTHONHASHSEED or cost more.
        rng = random.Random((spec.seed * 1_000_003 + h) * 1_000_003 + i)
        origin = self.origin(h)

        # The "next" link makes every page reachable from the root; the last page wraps around.
        nav = [page_path(0), page_path((i + 1) % n)]
        footer: list[str] = []
        main: list[str] = []
        if spec.variant_links:
            target = rng.randrange(1, n) if n > 1 else 0
            path = page_path(target)
            dotted = "/p/../" if target == 0 else "/p/.." + path
            main += [
                f"{path}#section-{rng.randrange(1, 9)}",
                f"{path}?{_UTM_QUERY}",
                f"HTTP://{spec.ip(h).upper()}:{self.port}{path}",
                dotted,
            ]
        if spec.cross_host_links and spec.hosts > 1:
            for _ in range(2):
                other = (h + rng.randrange(1, spec.hosts)) % spec.hosts
                main.append(self.origin(other) + page_path(rng.randrange(n)))
        if spec.out_of_scope_links:
            # Rotating through the five addresses puts each of them on every run of 5 pages.
            bad_ip = OUT_OF_SCOPE_IPS[(h + i) % len(OUT_OF_SCOPE_IPS)]
            footer += [
                f"http://{bad_ip}:{self.port}{page_path(i)}",
                f"http://example.invalid{page_path(i)}",
                "mailto:webmaster@example.invalid",
                "javascript:void(0)",
            ]
        remaining = spec.links_per_page - len(nav) - len(main) - len(footer)
        for k in range(max(0, remaining)):
            target = rng.randrange(n)
            # Alternate relative and absolute hrefs: crawlers must resolve both.
            main.append(origin + page_path(target) if k % 3 == 2 else page_path(target))
        return nav, main, footer

    def render(self, h: int, i: int) -> bytes:
        nav, main, footer = self.links(h, i)
        title = f"Host {h} page {i}"

        def anchors(hrefs: list[str], label: str) -> str:
            return "".join(
                f'<a href="{escape(href)}">{label} {k}</a>\n' for k, href in enumerate(hrefs)
            )

        head = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{title}</title></head>\n<body>\n"
            f"<nav>\n{anchors(nav, 'nav')}</nav>\n"
            f"<main>\n<h1>{title}</h1>\n{anchors(main, 'link')}<article>\n"
        ).encode()
        tail = f"</article>\n</main>\n<footer>\n{anchors(footer, 'ext')}</footer>\n</body></html>\n"
        tail_bytes = tail.encode()
        pad = max(0, self.spec.page_bytes - len(head) - len(tail_bytes))
        # Filler is whole paragraphs only up to the cut; a cut mid-paragraph is still valid
        # HTML for any real parser, and keeps generation to one slice.
        return b"".join((head, self._filler_view[:pad], tail_bytes))
