"""`run_sync` runs a coroutine like `asyncio.run` but never formats its result's repr."""

from __future__ import annotations

import asyncio

import pytest

from heta_eval.async_run import run_sync


class _Result:
    """A result whose repr counts its calls (asyncio.run on 3.11 formats it twice)."""

    reprs = 0

    def __repr__(self) -> str:
        type(self).reprs += 1
        return "_Result()"


async def _make() -> _Result:
    await asyncio.sleep(0)
    return _Result()


def test_the_result_is_returned_without_a_repr() -> None:
    _Result.reprs = 0
    result = run_sync(_make())
    assert isinstance(result, _Result) and _Result.reprs == 0


def test_exceptions_propagate() -> None:
    async def fail() -> None:
        raise ValueError("from the coroutine")

    with pytest.raises(ValueError, match="from the coroutine"):
        run_sync(fail())
