"""Handing cases to the ISA targets' worker processes ahead of their items.

The items of a variant group run target by target, `cpu:<level>` targets last (conformance.engine.ordering).
Each case is handed to the workers as soon as it is known (while hypothesis draws it, on the first target),
for every op of the group that has items on those targets, so the workers compute while this process checks
the other targets, and their items find the outputs waiting.  What a group has prefetched is dropped when the
next group begins.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from conformance.devices.targets import Target
from conformance.engine.cases import CaseCache, SamplerRaised
from conformance.engine.ledger import ItemInfo, ItemState
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import Case

PREFETCH_BYTES = 512 * 2**20  # estimated outputs held for a variant group's ISA items, at most


class IsaPrefetch:
    def __init__(self, targets: Iterable[Target], cache: CaseCache) -> None:
        self.targets = [t for t in targets if t.prefetches]
        self.cache = cache
        self._items: set[tuple[str, str, str, str]] = set()  # (test, dtype, mode, target) on ISA targets
        self._group: tuple[str, ...] | None = None  # the variant group the running items belong to
        self._handed: set[str] = set()  # cases of the group already handed to the workers
        self._bytes = 0
        self._plans: dict[tuple[str, str, str], list[tuple[OpSpec, list[Target]]]] = {}

    def learn_items(self, items: Iterable[ItemInfo]) -> None:
        """The session's items: which ops have items on which ISA targets."""
        names = {t.name for t in self.targets}
        self._items = {(i.test, i.dtype, i.mode, i.target) for i in items if i.target in names}

    def enter_group(self, group: tuple[str, ...]) -> None:
        """A variant group's items begin: answers prefetched for the last group are dropped."""
        if group != self._group:
            self._group = group
            self._handed.clear()
            self._bytes = 0
            for target in self.targets:
                target.discard_prefetched()

    def hand_over(self, state: ItemState, case: Case) -> None:
        """Hand a case of this variant to the workers, for every op of the group that has items there."""
        if not self.targets or case.key in self._handed:
            return
        for other, targets in self._plan(state):
            relabelled = case.relabelled(other.name)
            self._handed.add(relabelled.key)  # the same case under each op's name: handed over once
            if not targets or self._bytes > PREFETCH_BYTES:
                continue
            sampled = self.cache.sampled(other, relabelled)
            if isinstance(sampled, SamplerRaised):
                continue  # its run on every target is the sampler's error: nothing for a worker to do
            for target in targets:
                target.prefetch(other, relabelled, sampled, self.cache.timeout_s)
                self._bytes += 8 * math.prod(case.recipe.shape)

    def _plan(self, state: ItemState) -> list[tuple[OpSpec, list[Target]]]:
        """The ops that check this item's cases (the operation's implementations sharing them), each with the
        ISA targets it has items on; worked out once per op, dtype and mode."""
        info = state.info
        key = (info.spec.name, info.dtype, info.mode)
        found = self._plans.get(key)
        if found is None:
            spec, member = info.spec, info.spec.member
            specs = (
                [spec]
                if member is None or not member.shares_cases
                else [
                    s
                    for s in member.operation.specs()
                    if s.member is not None and s.member.shares_cases and (info.dtype, info.mode) in s.variant_pairs()
                ]
            )
            found = self._plans[key] = [
                (
                    other,
                    [
                        t
                        for t in self.targets
                        if t.has_items(other) and (f"test_{other.name}", info.dtype, info.mode, t.name) in self._items
                    ],
                )
                for other in specs
            ]
        return found
