"""A Kafka-protocol proxy in front of the test broker that rewrites chosen answers.

Tansu has no ACLs, so it never denies anything. To see a recorder meet a denial through
its real client library, the broker is started advertising this proxy's port (so every
client connection, bootstrap and coordinator alike, comes through it), and the proxy
passes every byte on except the answers a rule names: those it decodes with
kafka-python's schema-driven messages, changes as an ACL-enforcing broker would answer,
and encodes again at the version the client asked for.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["KafkaProxy", "Rewrite"]

# (api_key -> rewrite of the decoded response, in place)
Rewrite = Callable[[Any], None]


def _read_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(size)
        if not chunk:
            raise ConnectionError("closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", _read_exact(sock, 4))
    return _read_exact(sock, size)


class KafkaProxy:
    """Listens on ``port`` and forwards to ``upstream``; ``rules`` maps api keys to rewrites."""

    def __init__(self, port: int, upstream: int, rules: dict[int, Rewrite]) -> None:
        self.port, self.upstream, self.rules = port, upstream, rules
        self.rewritten: list[int] = []
        self._server = socket.create_server(("127.0.0.1", port))
        self._sockets: list[socket.socket] = [self._server]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
                broker = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                return
            self._sockets += [client, broker]
            asked: dict[int, tuple[int, int]] = {}
            threading.Thread(
                target=self._requests, args=(client, broker, asked), daemon=True
            ).start()
            threading.Thread(
                target=self._answers, args=(broker, client, asked), daemon=True
            ).start()

    def _requests(
        self, client: socket.socket, broker: socket.socket, asked: dict[int, tuple[int, int]]
    ) -> None:
        try:
            while True:
                frame = _read_frame(client)
                api_key, version, correlation = struct.unpack(">hhi", frame[:8])
                asked[correlation] = (api_key, version)
                broker.sendall(struct.pack(">i", len(frame)) + frame)
        except (ConnectionError, OSError):
            self._shut(client, broker)

    def _answers(
        self, broker: socket.socket, client: socket.socket, asked: dict[int, tuple[int, int]]
    ) -> None:
        try:
            while True:
                frame = _read_frame(broker)
                (correlation,) = struct.unpack(">i", frame[:4])
                api_key, version = asked.pop(correlation, (-1, -1))
                rule = self.rules.get(api_key)
                if rule is not None:
                    frame = self._rewrite(frame, api_key, version, rule)
                client.sendall(struct.pack(">i", len(frame)) + frame)
        except (ConnectionError, OSError):
            self._shut(client, broker)

    def _rewrite(self, frame: bytes, api_key: int, version: int, rule: Rewrite) -> bytes:
        import kafka.protocol.admin
        import kafka.protocol.metadata  # noqa: F401  (registers the response classes)
        from kafka.protocol.api_header import RequestHeader, ResponseClassRegistry

        asked = RequestHeader(request_api_key=api_key, request_api_version=version)
        kind = ResponseClassRegistry.get_response_class(asked)
        # Response header: the correlation id, then (flexible versions) tagged fields.
        header = 4
        if kind.flexible_version_q(version):
            if frame[4] != 0:
                raise ValueError("tagged fields in a response header are not handled")
            header = 5
        answer = kind.decode(frame[header:], version=version)
        rule(answer)
        self.rewritten.append(api_key)
        answer._header = None  # decode() leaves the slot unset; encode() reads it
        return frame[:header] + bytes(answer.encode(version=version))

    @staticmethod
    def _shut(*sockets: socket.socket) -> None:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
