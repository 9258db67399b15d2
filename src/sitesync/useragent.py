"""The User-Agent sitesync sends unless told otherwise: who runs it and how to reach them."""

from __future__ import annotations

#: sitesync's product token. No URL of sitesync's own goes with it: the project has no public
#: page this code could vouch for, so the User-Agent names the operator's contact instead.
PRODUCT = "sitesync/0.1"
DEFAULT_USER_AGENT = PRODUCT + " (contact not configured)"


def default_user_agent(contact: str) -> str:
    """``sitesync/0.1 (+CONTACT)``: who runs this crawler and how a site owner reaches them."""
    contact = " ".join(contact.split())  # no header injection through a newline
    return f"{PRODUCT} (+{contact})" if contact else DEFAULT_USER_AGENT
