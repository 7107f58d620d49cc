"""Where the ranks of an estimated run sit: rank -> logical core -> chip -> instance.

Ranks fill an instance's logical cores in order (rank r on logical core ``r % cores_per_instance`` of
instance ``r // cores_per_instance``), as ``torchrun --nproc-per-node <cores>`` places them; a chip holds
``physical_cores / LNC`` logical cores. The numbers come from the platform table.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..runtime.platforms import InstanceSpec, Platform

__all__ = ["Placement", "GroupShape", "resolve_instance"]


def resolve_instance(platform: Platform, name: str | None, instances: int) -> InstanceSpec:
    """The instance of ``platform`` called ``name``; None picks the largest EC2 instance type (most chips;
    UltraServers only where the platform has no EC2 instance type, as Trn3).

    Raises:
        ValueError: unknown instance (naming the platform's instances) or ``instances`` < 1.
    """
    if instances < 1:
        raise ValueError(f"instances={instances}: an estimate needs at least 1 instance")
    if name is None:
        ec2 = [i for i in platform.instances if "." in i.name] or list(platform.instances)
        return max(ec2, key=lambda i: i.chips)
    try:
        return platform.instance(name)
    except ValueError:
        raise ValueError(f"{platform.name} has no instance {name!r}: use one of "
                         f"{', '.join(i.name for i in platform.instances)} (or --platform for another "
                         f"platform)") from None


@dataclass(frozen=True)
class GroupShape:
    """How a group of ranks spreads over the hardware.

    Attributes:
        size: ranks in the group.
        instances: instances the group spans.
        ranks_per_instance: largest number of group ranks on one instance.
        chips: chips the group spans.
        ranks_per_chip: largest number of group ranks on one chip.
        whole_chips: every chip the group touches has all its logical cores in the group.
    """

    size: int
    instances: int
    ranks_per_instance: int
    chips: int
    ranks_per_chip: int
    whole_chips: bool


@dataclass(frozen=True)
class Placement:
    """The hardware of an estimate: platform, LNC, instance type and count.

    Attributes:
        platform: the platform row; lnc: physical cores per logical core;
        instance: the instance type; instances: how many.
    """

    platform: Platform
    lnc: int
    instance: InstanceSpec
    instances: int

    @property
    def cores_per_chip(self) -> int:
        """Logical NeuronCores per chip."""
        return self.platform.chip.physical_cores // self.lnc

    @property
    def cores_per_instance(self) -> int:
        """Logical NeuronCores per instance."""
        return self.instance.chips * self.cores_per_chip

    @property
    def total_cores(self) -> int:
        """Logical NeuronCores of all instances."""
        return self.cores_per_instance * self.instances

    def locate(self, rank: int) -> tuple[int, int]:
        """(instance, chip within the instance) of ``rank``."""
        instance, core = divmod(rank, self.cores_per_instance)
        return instance, core // self.cores_per_chip

    def group(self, ranks: Iterable[int]) -> GroupShape:
        """The :class:`GroupShape` of a list of global ranks."""
        ranks = list(ranks)
        per_instance: dict[int, int] = {}
        per_chip: dict[tuple[int, int], int] = {}
        for r in ranks:
            where = self.locate(r)
            per_instance[where[0]] = per_instance.get(where[0], 0) + 1
            per_chip[where] = per_chip.get(where, 0) + 1
        return GroupShape(
            size=len(ranks), instances=len(per_instance), ranks_per_instance=max(per_instance.values(), default=0),
            chips=len(per_chip), ranks_per_chip=max(per_chip.values(), default=0),
            whole_chips=bool(per_chip) and all(c == self.cores_per_chip for c in per_chip.values()))
