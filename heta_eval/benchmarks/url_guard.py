"""Fetching a document's `source_uri` without reaching this machine or its network.

A host name is resolved and every address it resolves to must be public (not loopback,
private, link-local, multicast, reserved); redirects are followed one at a time (at most
`MAX_REDIRECTS`) and each target is checked the same way. The benchmark's
`allow_private_urls` opts out: `true` for every host, or a list of host names (as written in
the URLs) that may be private, e.g. the team's own document server.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.error
import urllib.request
from collections.abc import Iterable
from urllib.parse import urljoin, urlsplit

MAX_REDIRECTS = 5
PrivateHosts = bool | frozenset[str]
"""`allow_private_urls`: every host (`True`), none (`False`), or these host names."""


class UnsafeUrlError(ConnectionRefusedError):
    """A URL (or a redirect's target) that names a loopback, private or otherwise non-public
    address, and that the benchmark did not allow."""


def private_hosts(value: bool | Iterable[str] | None) -> PrivateHosts:
    """`allow_private_urls` as given in a config (a bool or a list of host names)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        raise ValueError(
            f"allow_private_urls: expected true, false or a list of host names, got {value!r}"
        )
    return frozenset(str(h).lower().rstrip(".") for h in value)


def public_address(address: str) -> bool:
    """Whether an IP address (as text, in any form a resolver accepts) is public."""
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address)
    except ValueError:
        try:  # the shorthands a resolver accepts too: 127.1, 2130706433, 0x7f000001
            ip = ipaddress.IPv4Address(socket.inet_aton(address))
        except OSError:
            return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def host_allowed(host: str, allowed: PrivateHosts) -> bool:
    """Whether `host` as written is allowed to be private (all are, or it is listed)."""
    name = host.lower().rstrip(".")
    return allowed is True or (isinstance(allowed, frozenset) and name in allowed)


def check_url(url: str, allowed: PrivateHosts) -> None:
    """Raise `UnsafeUrlError` unless every address `url`'s host resolves to is public (or
    the host is allowed to be private)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise UnsafeUrlError(f"{url!r:.120}: only http(s) URLs with a host are fetched")
    host = parts.hostname
    if host_allowed(host, allowed):
        return
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        raise UnsafeUrlError(_refusal(url, host, "loopback"))
    try:
        infos = socket.getaddrinfo(host, parts.port or 443, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise ConnectionRefusedError(f"{url!r:.120}: host {host!r} not found ({exc})") from None
    private = sorted({str(info[4][0]) for info in infos if not public_address(str(info[4][0]))})
    if private:
        raise UnsafeUrlError(_refusal(url, host, ", ".join(private)))


def _refusal(url: str, host: str, addresses: str) -> str:
    return (
        f"{url!r:.120}: host {host!r} resolves to a loopback, private or link-local address "
        f"({addresses}); set benchmark.allow_private_urls=true (or a list of the host names "
        "you trust) to fetch documents from your own network"
    )


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # each redirect is checked, then followed by `fetch`


def fetch(url: str, allowed: PrivateHosts, timeout: float = 60) -> bytes:
    """The body of `url`, every hop checked by `check_url` before it is requested."""
    opener = urllib.request.build_opener(_NoRedirects)
    for _ in range(MAX_REDIRECTS + 1):
        check_url(url, allowed)
        try:
            with opener.open(url, timeout=timeout) as handle:
                return handle.read()
        except urllib.error.HTTPError as exc:
            target = exc.headers.get("Location") if 300 <= exc.code < 400 else None
            if not target:
                raise
            exc.close()
            url = urljoin(url, target)
    raise ConnectionRefusedError(f"{url!r:.120}: more than {MAX_REDIRECTS} redirects")
