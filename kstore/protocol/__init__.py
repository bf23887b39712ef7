"""Kafka's group protocol: the coordinator and its members, on a simulated clock."""
