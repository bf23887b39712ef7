"""Recorders of real consumer groups: they turn what Kafka keeps into kstore events.

``offsets_codec`` decodes the records of ``__consumer_offsets``; ``offsets_events`` turns
a group's decoded records into events (timeline ``recorded``) and reads record dumps.
"""
