"""Reaching a Ray cluster: a plain TCP connection with a timeout before ``ray.init``, which
otherwise waits without end for an address where nothing listens."""

from __future__ import annotations

import socket

TIMEOUT = 10.0      # seconds to wait for the cluster's head to accept a connection


class Unreachable(ConnectionError):
    """Nothing answers at the address within the timeout."""


def probe(address: str, timeout: float = TIMEOUT) -> None:
    """Raise ``Unreachable`` unless ``host:port`` (or ``ray://host:port``) accepts a TCP
    connection within ``timeout`` seconds; ``auto`` and ``local`` are Ray's own to find."""
    if address in ("auto", "local"):
        return
    target = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise Unreachable(f"'{address}' is not a Ray address (HOST:PORT, ray://HOST:PORT, "
                          "auto)")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                      timeout=timeout):
            pass
    except OSError as exc:
        raise Unreachable(f"no Ray cluster answers at {address} within {timeout:g} s "
                          f"({exc.strerror or exc}); start one with 'ray start --head' or "
                          "check the address") from None
