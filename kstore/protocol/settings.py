"""The client and broker settings the group protocol depends on, with Kafka's defaults."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from kstore._limits import INT32_MAX

__all__ = ["ProtocolSettings"]


class ProtocolSettings(BaseModel):
    """Timeouts and intervals in milliseconds; names follow Kafka's configs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_timeout_ms: int = Field(45_000, ge=1, le=INT32_MAX)
    """``session.timeout.ms`` (classic; client default since Kafka 3.0)."""
    heartbeat_interval_ms: int = Field(3_000, ge=1, le=INT32_MAX)
    """``heartbeat.interval.ms`` (classic)."""
    max_poll_interval_ms: int = Field(300_000, ge=1, le=INT32_MAX)
    """``max.poll.interval.ms``: also the rebalance timeout a member sends."""
    initial_rebalance_delay_ms: int = Field(3_000, ge=0, le=INT32_MAX)
    """``group.initial.rebalance.delay.ms`` (broker): the first join of an empty group waits."""
    metadata_max_age_ms: int = Field(300_000, ge=1, le=INT32_MAX)
    """``metadata.max.age.ms``: how often the leader refreshes topic metadata."""
    poll_ms: int = Field(50, ge=0, le=INT32_MAX)
    """Time a member's poll loop takes to come back (e.g. to rejoin or acknowledge)."""
    consumer_session_timeout_ms: int = Field(45_000, ge=1, le=INT32_MAX)
    """``group.consumer.session.timeout.ms`` (broker, consumer protocol)."""
    consumer_heartbeat_interval_ms: int = Field(5_000, ge=1, le=INT32_MAX)
    """``group.consumer.heartbeat.interval.ms`` (broker, consumer protocol)."""
    offsets_topic_partitions: int = Field(50, ge=1, le=INT32_MAX)
    """``offsets.topic.num.partitions``: picks the group's coordinator partition."""
