"""Where a webhook may be sent: public addresses only, unless the operator allows a network.

A webhook's URL is set by whoever manages a site's channels, and the Celery worker POSTs to
it from inside the operator's network; without a check that is a server-side request
forgery: the worker would reach loopback services, the private network or a cloud's
metadata endpoint (169.254.169.254) for anyone with the ``manage`` scope. So:

- :func:`refusal` says why an address is not a public unicast one (loopback, private,
  link-local, multicast, reserved, shared, ..., and the IPv6 forms that carry such an IPv4
  address: IPv4-mapped, 6to4, NAT64), or None for a public address;
- :func:`refused_address` applies it to every address a name resolves to, except those in
  the operator's allowed networks (``FOOTFALL_WEBHOOK_ALLOWED_NETWORKS``);
- :class:`PinnedTransport` resolves the URL's host once, checks every address, and connects
  to a checked address, so a DNS answer that changes between the check and the connection
  (DNS rebinding) cannot lead the worker elsewhere.

Pinning is done by rewriting the request's URL to the checked IP address while the ``Host``
header (set by the client from the original URL) and TLS stay on the name: httpx's public
``sni_hostname`` request extension makes httpcore send the name as SNI and verify the
certificate against it. That uses only httpx's documented API; a custom httpcore network
backend would hook the connection itself, but httpx 0.28 offers no public way to give one
to its transport.

Proxies: a proxy resolves the name itself, so no check made here could apply. A client given
this transport does not use ``HTTP(S)_PROXY`` (httpx reads proxies from the environment only
for its default transport); webhooks through an egress proxy need
``FOOTFALL_WEBHOOK_ALLOWED_NETWORKS=*``, and the proxy then does the filtering.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# host, port -> the addresses to connect to, in order (textual IPv4 or IPv6, maybe scoped).
Resolver = Callable[[str, int], Sequence[str]]

SETTING = "FOOTFALL_WEBHOOK_ALLOWED_NETWORKS"
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)
_IETF_PROTOCOL = ipaddress.IPv4Network("192.0.0.0/24")  # RFC 6890; some Pythons call parts of it global
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the last 32 bits are the IPv4 address


class AddressRefused(Exception):
    """The webhook's host is, or resolves to, an address outside what may be reached; nothing
    was sent. The message names the host, the address, why, and the setting to change."""

    def __init__(self, host: str, address: str, why: str) -> None:
        named = address if host.strip("[]") == address else f"{host} ({address})"
        article = "an" if why[0] in "aeiouI" else "a"  # "an IPv4-mapped", "a 6to4", "a NAT64"
        super().__init__(
            f"{named} is {article} {why} address: webhooks go to public addresses only, "
            f"unless {SETTING} allows the receiver's network"
        )
        self.host = host
        self.address = address
        self.why = why


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` is not a public unicast address (``"loopback"``, ``"private"``,
    ``"IPv4-mapped loopback"``, ...), or None when it is one. IPv6 addresses that embed an IPv4
    one (IPv4-mapped, 6to4, NAT64) are judged by it, as that is where a connection may end up."""
    if isinstance(address, ipaddress.IPv6Address):
        address = _unscoped(address)  # a zone (fe80::1%eth0) never makes an address public
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            why = refusal(embedded[1])
            return f"{embedded[0]} {why}" if why else None
    checks: tuple[tuple[bool, str], ...] = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (address in _SHARED, "shared (carrier-grade NAT)"),
        (address.is_reserved, "reserved"),
        (address.is_private, "private"),
        (isinstance(address, ipaddress.IPv6Address) and address.is_site_local, "site-local"),
        (address in _IETF_PROTOCOL, "special-purpose (IETF protocol)"),
        (not address.is_global, "non-global"),
    )
    return next((why for refused, why in checks if refused), None)


def _unscoped(address: ipaddress.IPv6Address) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(str(address).split("%", 1)[0])


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 one stands for, with the form's name, if it is such a form."""
    if address.ipv4_mapped is not None:
        return "IPv4-mapped", address.ipv4_mapped
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    if address in _NAT64:
        return "NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def allowed(address: IPAddress, networks: Sequence[IPNetwork]) -> bool:
    """True when ``address`` (or the IPv4 address it maps) is in one of ``networks``."""
    if isinstance(address, ipaddress.IPv6Address):
        address = _unscoped(address)
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
    return any(address in network for network in networks)


def refused_address(host: str, addresses: Sequence[str], networks: Sequence[IPNetwork]) -> AddressRefused | None:
    """The refusal of the first of ``addresses`` (those ``host`` resolved to) that is neither
    public nor in ``networks``, or None when all may be reached. One refused address refuses
    the host: which one a connection would use is not ours to choose safely."""
    for text in addresses:
        address = ipaddress.ip_address(text)
        why = refusal(address)
        if why is not None and not allowed(address, networks):
            return AddressRefused(host, text, why)
    return None


def literal_refusal(url: str, networks: Sequence[IPNetwork]) -> AddressRefused | None:
    """The refusal of ``url`` when its host is an IP address literal (in any form the system
    accepts, e.g. ``127.1`` or ``2130706433``) that may not be reached; None for a name, which
    is checked when a webhook is sent (its DNS answer can change)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host:
        return None
    try:  # AI_NUMERICHOST: parse literals only, never a DNS query
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return None
    return refused_address(host, [str(info[4][0]) for info in infos], networks)


def resolve(host: str, port: int) -> list[str]:
    """The system resolver's addresses of ``host`` for TCP, in its order, each once;
    ``socket.gaierror`` when the name does not resolve."""
    seen: dict[str, None] = {}
    for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


class PinnedTransport(httpx.HTTPTransport):
    """An httpx transport that resolves each request's host once with ``resolver``, refuses it
    (:class:`AddressRefused`, before any connection) when an address is neither public nor in
    ``networks``, and connects to the checked addresses in order until one accepts."""

    def __init__(self, networks: Sequence[IPNetwork], resolver: Resolver = resolve, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._networks = tuple(networks)
        self._resolver = resolver

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        host = url.raw_host.decode("ascii")  # IDNA-encoded; an IPv6 literal without brackets
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            addresses = list(self._resolver(host, port))
        except (OSError, UnicodeError) as exc:  # gaierror: a name that does not resolve (now)
            raise httpx.ConnectError(f"could not resolve {host}: {exc}", request=request) from exc
        if not addresses:
            raise httpx.ConnectError(f"{host} resolved to no address", request=request)
        refused = refused_address(host, addresses, self._networks)
        if refused is not None:
            raise refused
        *others, last = addresses
        for address in others:
            try:
                return self._send_to(request, url, host, address)
            except httpx.ConnectError:  # nothing was sent: the next address may answer
                continue
        return self._send_to(request, url, host, last)

    def _send_to(self, request: httpx.Request, url: httpx.URL, host: str, address: str) -> httpx.Response:
        """``request`` sent over a connection to ``address``; the ``Host`` header keeps the name
        (the client set it from the URL) and TLS sends and verifies the name, not the address."""
        request.url = url.copy_with(host=address)
        request.extensions = {**request.extensions, "sni_hostname": host}
        return super().handle_request(request)
