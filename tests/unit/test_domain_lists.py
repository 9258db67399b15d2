"""Reading domain files and checking scan cadences (no store involved)."""

from __future__ import annotations

import pytest

from sitesync.cadence import check_cadence
from sitesync.cli.domain_files import normalize_domain, read_domain_list
from sitesync.config import load_settings
from sitesync.errors import ConfigError, InvalidURL


@pytest.mark.parametrize(
    ("entry", "host"),
    [
        ("Example.COM", "example.com"),
        ("https://www.example.com/about?x=1", "www.example.com"),
        ("http://example.com:80/", "example.com"),
        ("example.com:8443", "example.com:8443"),
        ("  bücher.de.  ", "xn--bcher-kva.de"),
        ("http://127.0.0.2:8080/", "127.0.0.2:8080"),
    ],
)
def test_entries_normalize_to_bare_hosts(entry: str, host: str) -> None:
    assert normalize_domain(entry) == host


@pytest.mark.parametrize("entry", ["", "exa mple.com", "ftp://example.com", "a..b", "x.com:99999"])
def test_bad_entries_say_why(entry: str) -> None:
    with pytest.raises(InvalidURL) as caught:
        normalize_domain(entry)
    assert "https://" not in str(caught.value)  # the reason, not the URL built from the entry


def test_a_plain_list_skips_comments_and_blanks_and_numbers_bad_lines() -> None:
    text = "# my sites\nexample.com\n\nhttps://Example.com/\nnot a host\nbücher.de\n"
    found = read_domain_list(text)
    assert found.hosts == ["example.com", "xn--bcher-kva.de"]  # each once, in file order
    assert [line for line, _ in found.problems] == [5]
    assert "'not a host'" in found.problems[0][1]


def test_a_csv_uses_its_domain_host_or_url_column() -> None:
    text = 'name,URL,notes\nShop,https://shop.example/,"a, b"\nBad,http://,x\nEmpty,,\nNews,news.example,\n'
    found = read_domain_list(text)
    assert found.hosts == ["shop.example", "news.example"]
    assert [line for line, _ in found.problems] == [3, 4]


def test_a_one_column_csv_has_a_header_line() -> None:
    found = read_domain_list("domain\nexample.com\nexample.org\n")
    assert found.hosts == ["example.com", "example.org"] and not found.problems


def test_a_csv_without_a_domain_column_is_refused_naming_the_header() -> None:
    with pytest.raises(ConfigError, match="no 'domain', 'host' or 'url' column"):
        read_domain_list("name,notes\nShop,x\n")


def test_cadences_are_five_field_cron_expressions() -> None:
    assert check_cadence(" 0  3 1 * * ") == "0 3 1 * *"
    assert check_cadence("@weekly") == "@weekly"
    for bad in ("61 * * * *", "0 3 1 * * *", "monthly", ""):
        with pytest.raises(ConfigError, match="invalid cadence"):
            check_cadence(bad)


def test_a_bad_default_cadence_fails_at_start_up_naming_the_setting() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(scan_cadence="every month")
    message = str(caught.value)
    assert "scan_cadence" in message and "'every month'" in message and "\n" not in message


@pytest.mark.parametrize(
    ("entry", "host"),
    [
        ("0x08080808", "8.8.8.8"),  # hex, one number
        ("134744072", "8.8.8.8"),  # decimal, one number
        ("010.010.010.010:8080", "8.8.8.8:8080"),  # octal parts, the port kept
        ("8.0x8.2056", "8.8.8.8"),  # a short form: the last part fills the rest
        ("http://1.2.3.4./", "1.2.3.4"),
    ],
)
def test_a_host_written_as_numbers_is_the_address_it_means(entry: str, host: str) -> None:
    """WHATWG URL host parsing, as browsers and the resolver (inet_aton) read such hosts."""
    assert normalize_domain(entry) == host


def test_private_addresses_written_as_numbers_are_refused_line_by_line() -> None:
    text = "0x7f.1\n0xa9fea9fe\n2852039166\n0177.0.0.1\n127.1\nexample.com\n1.2.3.4.5\n09.1.1.1\n"
    found = read_domain_list(text)
    assert found.hosts == ["example.com"]
    problems = dict(found.problems)
    assert problems[1] == (
        "'0x7f.1': 127.0.0.1 is a loopback address"
        " (open it with allowed_networks or allow_private_networks)"
    )
    assert "169.254.169.254 is a link-local address" in problems[2]
    assert "169.254.169.254 is a link-local address" in problems[3]
    assert "127.0.0.1 is a loopback address" in problems[4] and problems[4].startswith("'0177")
    assert "127.0.0.1 is a loopback address" in problems[5]
    # Ends in a number, but is no address: refused as browsers refuse such a URL.
    assert problems[7] == "'1.2.3.4.5': 1.2.3.4.5 ends in a number but is no IPv4 address"
    assert "no IPv4 address" in problems[8]  # 09 is no octal number


def test_profile_columns_give_each_domain_its_own_profile() -> None:
    text = (
        "Domain,Headers,Cookies,Auth,Proxy\n"
        'a.example,"{""X-A"": ""1"", ""X-B"": 2}",consent=yes; id=7,bearer T0KEN,\n'
        "b.example,X-C: 3;,,,http://proxy.example:3128\n"
        "c.example,,,,\n"
    )
    found = read_domain_list(text)
    assert not found.problems and found.hosts == ["a.example", "b.example", "c.example"]
    assert found.profiles == {
        "a.example": {"headers": {"X-A": "1", "X-B": "2"},
                      "cookies": {"consent": "yes", "id": "7"}, "auth": "bearer T0KEN"},
        "b.example": {"headers": {"X-C": "3"}, "proxy": "http://proxy.example:3128"},
        "c.example": None,  # its line clears a profile it had
    }  # fmt: skip
    assert read_domain_list("domain,notes\na.example,x\n").profiles is None  # keeps them


@pytest.mark.parametrize(
    ("cells", "column"),
    [
        ("X-A 1,,", "headers"),  # no separator
        ('"{""X"": {""nested"": 1}}",,', "headers"),
        ('"X-A: 1\nX-B: 2",,', "headers"),  # a line break would smuggle in a header
        (",consent,", "cookies"),
        (",,basic nocolon-pw", "auth"),
        (",,token pw-xyz", "auth"),
    ],
)
def test_a_bad_profile_cell_costs_its_line_naming_the_column_not_the_value(
    cells: str, column: str
) -> None:
    found = read_domain_list(f"domain,headers,cookies,auth\nbad.example,{cells}\nok.example,,,\n")
    assert found.hosts == ["ok.example"]
    [(line, problem)] = found.problems
    assert line == 2 and problem.startswith(f"'bad.example': {column}"), problem
    assert "nocolon-pw" not in problem and "pw-xyz" not in problem and "nested" not in problem


def test_a_domain_listed_twice_with_two_profiles_keeps_the_first() -> None:
    found = read_domain_list("domain,auth\na.example,bearer one\nA.example,bearer two\n")
    assert found.profiles == {"a.example": {"auth": "bearer one"}}
    assert found.problems == [(3, "a.example: on line 2 with another profile")]
