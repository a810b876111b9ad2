"""Which Host (and Origin) a dashboard answers to: the defence against DNS rebinding.

A page on evil.example whose name an attacker re-points at 127.0.0.1 reaches a dashboard on loopback with
`Host: evil.example:PORT` (and an Origin of the same name, so Origin == Host checks pass): only a list of
the names the dashboard is really reached by stops it. Pure code, no Voilà: `aiworkbook app` validates
`--allow-host` here (exit 2) and the Voilà server (aiworkbook.widgets.dashboard_server) enforces it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiworkbook.errors import SpecError

#: the names of this machine's loopback interface, always allowed (with the served port)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::")
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _name(value: str) -> str | None:
    """A host name or IP address in one canonical spelling (lower case, IPv6 without brackets), or None."""
    value = value.strip().lower()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    return value if len(value) <= 253 and _HOSTNAME.match(value) else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _split(value: str) -> tuple[str, str | None]:
    """'name:port', '[v6]:port', 'name', '[v6]' or a bare IPv6 address into (name, port text or None)."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        return value[: end + 1], (rest[1:] if rest.startswith(":") else (rest or None))
    if value.count(":") == 1:
        name, port = value.split(":")
        return name, port
    return value, None


def _port(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or not (0 < int(text) < 65536):
        raise ValueError(text)
    return int(text)


def parse_allow_host(value: str) -> tuple[str, int | None]:
    """One `--allow-host` value: NAME (any port: a reverse proxy's Host) or NAME:PORT."""
    allowed = "a host name or IP address, optionally with :PORT (e.g. dash.example.com or 10.0.0.5:8866)"
    text = str(value).strip()
    name, port_text = _split(text)
    canonical = _name(name)
    try:
        port = _port(port_text)
    except ValueError:
        canonical = None
        port = None
    if not text or canonical is None or canonical in WILDCARDS:
        raise SpecError("allow-host", text[:200], allowed)
    return canonical, port


def _machine_addresses() -> set[str]:
    """This machine's own addresses and host name: what a viewer types to reach a 0.0.0.0 server."""
    import psutil

    names = {socket.gethostname().lower()}
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                names.add(a.address.split("%", 1)[0])
    return {n for n in (_name(x) for x in names) if n}


@dataclass(frozen=True)
class HostAllowlist:
    """(name, port) pairs a request's Host and Origin may name; port None: any port."""

    entries: frozenset[tuple[str, int | None]]

    def _allows(self, name: str | None, port: int | None) -> bool:
        return name is not None and ((name, port) in self.entries or (name, None) in self.entries)

    def allows_host(self, host: str | None) -> bool:
        """Whether a Host header names this dashboard (no header: refused; HTTP/1.1 requires one)."""
        if not host:
            return False
        name, port_text = _split(host.strip())
        try:
            port = _port(port_text)
        except ValueError:
            return False
        return self._allows(_name(name), 80 if port is None else port)

    def allows_origin(self, origin: str | None) -> bool:
        """Whether an Origin header (absent: a script or a same-origin GET) names this dashboard."""
        if origin is None:
            return True
        try:
            parts = urlsplit(origin.strip())
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
            return False
        return self._allows(_name(parts.hostname), port or _DEFAULT_PORTS[parts.scheme])

    def hostnames(self) -> list[str]:
        """The allowed names that are not IP addresses."""
        return sorted({n for n, _ in self.entries if not _is_ip(n)})

    def all_local(self) -> bool:
        """True when every allowed name is a host name or a loopback address: jupyter_server's own
        check (allow_remote_access=False, local_hostnames) then refuses the same foreign names."""
        return all(not _is_ip(n) or ipaddress.ip_address(n).is_loopback for n, _ in self.entries)


def allowlist(ip: str, port: int, extra: Iterable[str] = ()) -> HostAllowlist:
    """The loopback names with the served port, the bound address (for 0.0.0.0 or ::, this machine's
    addresses and host name) and each `--allow-host` value."""
    entries: set[tuple[str, int | None]] = {(n, port) for n in LOOPBACK_NAMES}
    bound = _name(ip)
    if bound in WILDCARDS:
        entries |= {(n, port) for n in _machine_addresses()}
    elif bound is not None:
        entries.add((bound, port))
    entries |= {parse_allow_host(v) for v in extra}
    return HostAllowlist(frozenset(entries))
