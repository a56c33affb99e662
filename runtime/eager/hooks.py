"""Handles returned by ``register_hook``: ``handle.remove()`` unregisters the hook."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

_ids = itertools.count()


class RemovableHandle:
    """Removes one hook from the dict it was registered in."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict, hook_id: int) -> None:
        self._hooks = hooks
        self.id = hook_id

    @classmethod
    def add(cls, hooks: dict, fn: Callable) -> RemovableHandle:
        hook_id = next(_ids)
        hooks[hook_id] = fn
        return cls(hooks, hook_id)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
