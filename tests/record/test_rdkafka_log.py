"""A librdkafka leader's assignor run, read from its debug log as the listener gets it."""

from __future__ import annotations

from kstore.record._rdkafka_log import FACILITIES, LeaderLog

# Generation 1 of a live cooperative-sticky group on Tansu (librdkafka 2.16), as the
# consumer's ``logger`` gets it: the facility, the client, the thread, the text.
A, B = "rdkafka-1cafe3cb", "rdkafka-c9427766"
TOPIC = "orders"
LINES = [
    "JOINGROUP [rdkafka#consumer-1] [thrd:main]: JoinGroup response: GenerationId 1, "
    f"Protocol cooperative-sticky, LeaderId {A} (me), my MemberId {A}, member metadata "
    "count 2: (no error)",
    'ASSIGN [rdkafka#consumer-1] [thrd:main]: Group "g" running cooperative-sticky '
    "assignor for 2 member(s) and 1 eligible subscribed topic(s):",
    f'ASSIGN [rdkafka#consumer-1] [thrd:main]:  Member "{A}" (me) with 4 owned '
    "partition(s) and 1 subscribed topic(s):",
    f"ASSIGN [rdkafka#consumer-1] [thrd:main]:   {TOPIC} [-1]",
    f'ASSIGN [rdkafka#consumer-1] [thrd:main]:  Member "{B}" with 0 owned partition(s) '
    "and 1 subscribed topic(s):",
    f"ASSIGN [rdkafka#consumer-1] [thrd:main]:   {TOPIC} [-1]",
    f"STICKY [rdkafka#consumer-1] [thrd:main]: {TOPIC} [0] reassigned to {B} (from {A})",
    f'ASSIGN [rdkafka#consumer-1] [thrd:main]:  Member "{A}" (me) assigned 2 partition(s):',
    f"ASSIGN [rdkafka#consumer-1] [thrd:main]:   {TOPIC} [2]",
    f"ASSIGN [rdkafka#consumer-1] [thrd:main]:   {TOPIC} [3]",
    f'ASSIGN [rdkafka#consumer-1] [thrd:main]:  Member "{B}" assigned 2 partition(s):',
    f"ASSIGN [rdkafka#consumer-1] [thrd:main]:   {TOPIC} [0]",
    f"ASSIGN [rdkafka#consumer-1] [thrd:main]:   {TOPIC} [1]",
    "GRPASSIGNMENT [rdkafka#consumer-1] [thrd:main]:  orders [2]",
]


def test_a_run_is_read_whole_once_its_last_member_has_its_partitions() -> None:
    log = LeaderLog()
    runs = []
    for at, line in enumerate(LINES):
        facility, _, rest = line.partition(" ")
        if facility in FACILITIES:
            runs.append(log.feed(float(at), rest.split("]: ", 1)[1]))
    done = [run for run in runs if run is not None]
    assert runs[-1] is not None and len(done) == 1
    (run,) = done
    assert (run.generation, run.strategy, run.at) == (1, "cooperative-sticky", 1.0)
    assert run.members == [(A, 4, [TOPIC]), (B, 0, [TOPIC])]
    assert run.assigned == {A: [(TOPIC, 2), (TOPIC, 3)], B: [(TOPIC, 0), (TOPIC, 1)]}


def test_a_run_cut_short_gives_nothing_and_the_next_join_starts_again() -> None:
    log = LeaderLog()
    for line in LINES[:9]:
        assert log.feed(0.0, line.split("]: ", 1)[1]) is None
    assert log.feed(0.0, LINES[0].split("]: ", 1)[1]) is None
    assert all(log.feed(0.0, line.split("]: ", 1)[1]) is None for line in LINES[1:12])
    assert log.feed(0.0, LINES[12].split("]: ", 1)[1]) is not None
