"""``optimal``: kstore's own strategy, the fewest moves a best-balanced decision can make.

Among the assignments that give every partition of a subscribed topic to one of its
subscribers, it finds one that first minimises the sum of the squares of the members'
loads (as even as the subscriptions allow: no chain of moves evens it further) and then,
among those, the number of partitions taken from their current owner. It is exact: a
min-cost flow where a member's k-th partition costs ``BIG * (2k - 1)`` (so the loads'
part of the cost is ``BIG`` times the sum of squares) and a move costs 1, with ``BIG``
larger than any number of moves.

The flow runs on partitions grouped into interchangeable classes: partitions whose
topics have the same subscribers and that have the same current owner can swap places
at no cost, so the network has one node per class, per set of subscribers (a hub that
reaches each subscriber) and per member, whatever the partition count. It is solved by
successive shortest paths (Dijkstra with potentials), pushing a maximal flow over the
zero-reduced-cost arcs at each distance, so each round gives one more partition to
every member that is equally cheap to load.
"""

from __future__ import annotations

import heapq
from collections import deque

from kstore.assignors._contract import AssignmentRequest, AssignmentResult, TopicPartition

__all__ = ["OPTIMAL", "OptimalAssignor"]

_UNBOUNDED = 1 << 60


class _Network:
    """A residual network; edge ``e`` and its reverse ``e ^ 1`` are stored side by side."""

    def __init__(self, nodes: int) -> None:
        self.adjacent: list[list[int]] = [[] for _ in range(nodes)]
        self.target: list[int] = []
        self.capacity: list[int] = []
        self.cost: list[int] = []

    def add(self, source: int, target: int, capacity: int, cost: int) -> int:
        edge = len(self.target)
        self.target += [target, source]
        self.capacity += [capacity, 0]
        self.cost += [cost, -cost]
        self.adjacent[source].append(edge)
        self.adjacent[target].append(edge + 1)
        return edge


class _Solver:
    """Min-cost flow from ``source`` to ``sink`` with convex member-to-sink costs."""

    def __init__(self, net: _Network, source: int, sink: int, member_edges: list[int]) -> None:
        self.net = net
        self.source = source
        self.sink = sink
        self.member_edges = member_edges
        self.potential = [0] * len(net.adjacent)

    def _distances(self) -> list[int]:
        net, potential = self.net, self.potential
        dist = [_UNBOUNDED] * len(net.adjacent)
        dist[self.source] = 0
        heap = [(0, self.source)]
        while heap:
            d, node = heapq.heappop(heap)
            if d > dist[node] or node == self.sink:
                continue
            base = d + potential[node]
            for edge in net.adjacent[node]:
                if net.capacity[edge]:
                    nxt = net.target[edge]
                    nd = base + net.cost[edge] - potential[nxt]
                    if nd < dist[nxt]:
                        dist[nxt] = nd
                        heapq.heappush(heap, (nd, nxt))
        return dist

    def run(self, demand: int, bump: int) -> None:
        """Push ``demand`` units; a member edge costs ``bump`` more after each unit."""
        net = self.net
        while demand:
            dist = self._distances()
            if dist[self.sink] >= _UNBOUNDED:
                raise ValueError("optimal: the network cannot carry every partition")
            reach = dist[self.sink]
            for node, d in enumerate(dist):
                self.potential[node] += d if d < reach else reach
            demand -= self._blocking_flow(demand)
            for edge in self.member_edges:
                if net.capacity[edge] == 0:
                    net.capacity[edge] = 1
                    net.cost[edge] += bump
                    net.capacity[edge ^ 1] = 0

    def _admissible(self, edge: int, node: int) -> bool:
        net = self.net
        return (
            net.capacity[edge] > 0
            and net.cost[edge] + self.potential[node] - self.potential[net.target[edge]] == 0
        )

    def _blocking_flow(self, limit: int) -> int:
        """Augment over zero-reduced-cost edges until none reaches the sink (Dinic)."""
        net = self.net
        pushed = 0
        while pushed < limit:
            level = [-1] * len(net.adjacent)
            level[self.source] = 0
            queue = deque([self.source])
            while queue:
                node = queue.popleft()
                for edge in net.adjacent[node]:
                    nxt = net.target[edge]
                    if level[nxt] < 0 and self._admissible(edge, node):
                        level[nxt] = level[node] + 1
                        queue.append(nxt)
            if level[self.sink] < 0:
                break
            cursor = [0] * len(net.adjacent)
            while pushed < limit:
                amount = self._augment(level, cursor, limit - pushed)
                if not amount:
                    break
                pushed += amount
        return pushed

    def _augment(self, level: list[int], cursor: list[int], limit: int) -> int:
        net = self.net
        path: list[int] = []
        node = self.source
        while node != self.sink:
            edges = net.adjacent[node]
            while cursor[node] < len(edges):
                edge = edges[cursor[node]]
                nxt = net.target[edge]
                if level[nxt] == level[node] + 1 and self._admissible(edge, node):
                    break
                cursor[node] += 1
            else:
                if not path:
                    return 0
                level[node] = -1  # a dead end for the rest of this level graph
                edge = path.pop()
                node = net.target[edge ^ 1]
                cursor[node] += 1
                continue
            path.append(edge)
            node = nxt
        amount = min(limit, *(net.capacity[e] for e in path))
        for edge in path:
            net.capacity[edge] -= amount
            net.capacity[edge ^ 1] += amount
        return amount


class OptimalAssignor:
    """The most even assignment that moves the fewest partitions (exact)."""

    name = "optimal"
    reads_owned = True

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        members = list(request.members)
        index = {m: i for i, m in enumerate(members)}
        subscribers: dict[str, tuple[int, ...]] = {}
        for topic in request.topics:
            subs = tuple(i for i, m in enumerate(members) if topic in request.members[m].topics)
            if subs:
                subscribers[topic] = subs
        owner: dict[TopicPartition, int] = {}
        for member, sub in request.members.items():
            for tp in sub.owned:
                if tp[0] in subscribers and index[member] in subscribers[tp[0]]:
                    owner.setdefault(tp, index[member])

        assignment: dict[int, list[TopicPartition]] = {i: [] for i in range(len(members))}
        classes: dict[tuple[tuple[int, ...], int], list[TopicPartition]] = {}
        for topic, subs in subscribers.items():
            for partition in range(request.topics[topic]):
                tp = (topic, partition)
                if len(subs) == 1:  # nowhere else to go: not part of the choice
                    assignment[subs[0]].append(tp)
                else:
                    classes.setdefault((subs, owner.get(tp, -1)), []).append(tp)
        self._place(len(members), classes, assignment)
        return AssignmentResult(
            assignment={m: sorted(assignment[i]) for i, m in enumerate(members)}
        )

    def _place(
        self,
        count: int,
        classes: dict[tuple[tuple[int, ...], int], list[TopicPartition]],
        assignment: dict[int, list[TopicPartition]],
    ) -> None:
        demand = sum(len(tps) for tps in classes.values())
        if not demand:
            return
        big = demand + 1
        hubs = {subs: i for i, subs in enumerate(dict.fromkeys(s for s, _ in classes))}
        source, sink = 0, 1
        member_node = 2
        hub_node = member_node + count
        class_node = hub_node + len(hubs)
        net = _Network(class_node + len(classes))
        member_edges = [
            net.add(member_node + m, sink, 1, big * (2 * len(assignment[m]) + 1))
            for m in range(count)
        ]
        hub_edges: dict[int, list[tuple[int, int]]] = {}
        for subs, hub in hubs.items():
            hub_edges[hub] = [
                (m, net.add(hub_node + hub, member_node + m, _UNBOUNDED, 0)) for m in subs
            ]
        class_edges: list[tuple[int, int, int]] = []
        for n, ((subs, held_by), tps) in enumerate(classes.items()):
            node = class_node + n
            net.add(source, node, len(tps), 0)
            stay = net.add(node, member_node + held_by, len(tps), 0) if held_by >= 0 else -1
            move = net.add(node, hub_node + hubs[subs], len(tps), 1 if held_by >= 0 else 0)
            class_edges.append((stay, move, hubs[subs]))

        _Solver(net, source, sink, member_edges).run(demand, 2 * big)

        # Read the flow back: who keeps what, and who takes each hub's partitions.
        def flow(edge: int) -> int:
            return net.capacity[edge ^ 1]

        pools: dict[int, list[TopicPartition]] = {hub: [] for hub in hubs.values()}
        for ((_, held_by), tps), (stay, move, hub) in zip(
            classes.items(), class_edges, strict=True
        ):
            kept = flow(stay) if stay >= 0 else 0
            assignment.setdefault(held_by, []).extend(tps[:kept])
            pools[hub].extend(tps[kept : kept + flow(move)])
        for hub, pool in pools.items():
            start = 0
            for member, edge in hub_edges[hub]:
                taken = flow(edge)
                assignment[member].extend(pool[start : start + taken])
                start += taken


OPTIMAL = OptimalAssignor()
