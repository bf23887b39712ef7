"""Authorization failures, live: each recorder's real client meets a broker that denies.

Tansu has no ACLs, so the broker is started advertising a proxy (tests/kafka_proxy.py)
that passes everything on but rewrites the answers an ACL-enforcing Kafka would give a
principal without the named permission. Each denial is one line naming the missing ACL,
exit 2, at once, no retry.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kstore.store.log import Store
from tests.broker import free_port, start_broker, tansu_binary
from tests.kafka_proxy import KafkaProxy, Rewrite
from tests.record.test_failures_live import error_lines, kstore, run

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("broker")]

METADATA, DESCRIBE_GROUPS = 3, 15
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
READ, DESCRIBE = 3, 8  # Kafka's AclOperation codes


def offsets_topic_denied(answer: Any) -> None:
    """No Describe on the topic: Kafka answers TOPIC_AUTHORIZATION_FAILED, existing or not."""
    for topic in answer.topics:
        if topic.name == "__consumer_offsets":
            topic.error_code = TOPIC_AUTHORIZATION_FAILED


def offsets_topic_without_read(answer: Any) -> None:
    """Describe but no Read: the topic is there (one partition on this broker) and its
    authorized operations, asked for, say only Describe."""
    from kafka.protocol.metadata import MetadataResponse

    partition = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    for topic in answer.topics:
        if topic.name == "__consumer_offsets":
            leader = answer.brokers[0].node_id
            topic.error_code = 0
            topic.topic_id = uuid.uuid4()
            topic.partitions = [
                partition(
                    error_code=0,
                    partition_index=0,
                    leader_id=leader,
                    leader_epoch=0,
                    replica_nodes=[leader],
                    isr_nodes=[leader],
                    offline_replicas=[],
                )
            ]
            topic.authorized_operations = {DESCRIBE}


def group_denied(answer: Any) -> None:
    for group in answer.groups:
        group.error_code = GROUP_AUTHORIZATION_FAILED
        group.members = []


@pytest.fixture
def denying(tmp_path: Path) -> Iterator[tuple[Store, list[KafkaProxy], Any]]:
    binary = tansu_binary()
    assert binary is not None
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    proxies: list[KafkaProxy] = []
    brokers = []

    def behind_proxy(rules: dict[int, Rewrite]) -> str:
        port = free_port()
        broker = start_broker(binary, tmp_path / f"tansu-{port}.log", advertise=port)
        brokers.append(broker)
        proxies.append(KafkaProxy(port, broker.port, rules))
        return f"127.0.0.1:{port}"

    try:
        yield store, proxies, behind_proxy
    finally:
        for proxy in proxies:
            proxy.close()
        for broker in brokers:
            broker.stop()


@pytest.mark.parametrize(
    ("rule", "missing"),
    [
        (offsets_topic_denied, "no Describe on topic __consumer_offsets"),
        (offsets_topic_without_read, "no Read on topic __consumer_offsets"),
    ],
)
def test_the_offsets_recorder_names_the_acl_it_lacks(
    denying: tuple[Store, list[KafkaProxy], Any], rule: Rewrite, missing: str
) -> None:
    store, proxies, behind_proxy = denying
    bootstrap = behind_proxy({METADATA: rule})
    done, took = run(kstore(store, "offsets", "--all-groups", "--bootstrap-server", bootstrap))
    assert done.returncode == 2, done.stderr
    (line,) = error_lines(done.stderr)
    assert line.startswith(f"kstore: error: authorization: {missing} ("), line
    assert "Traceback" not in done.stderr and "retry 1" not in done.stderr
    assert METADATA in proxies[0].rewritten  # the answer really came through the proxy
    assert took < 15
    assert list(store.events()) == []


def test_the_poller_names_the_group_it_may_not_describe(
    denying: tuple[Store, list[KafkaProxy], Any],
) -> None:
    store, proxies, behind_proxy = denying
    allowed = behind_proxy({})
    done, _ = run(
        kstore(store, "poll", "--group", "g", "--polls", "1", "--bootstrap-server", allowed)
    )
    assert done.returncode == 0, done.stderr  # the same command, nothing denied

    denied = behind_proxy({DESCRIBE_GROUPS: group_denied})
    done, took = run(
        kstore(store, "poll", "--group", "g", "--polls", "1", "--bootstrap-server", denied)
    )
    assert done.returncode == 2, done.stderr
    (line,) = error_lines(done.stderr)
    assert line.startswith("kstore: error: authorization: no Describe on group g ("), line
    assert "Traceback" not in done.stderr and "retry 1" not in done.stderr
    assert proxies[1].rewritten == [DESCRIBE_GROUPS]
    assert took < 15
