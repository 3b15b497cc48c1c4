"""Fetching the next page while this one is evaluated (kubegap.audit.paging.ahead)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from kubegap.audit.paging import ahead
from kubegap.audit.transport import ApiFailure


def test_pages_come_in_order_and_all_of_them() -> None:
    assert list(ahead(iter([[1], [2, 3], [], [4]]))) == [[1], [2, 3], [], [4]]


def test_an_error_is_raised_where_its_page_would_have_come() -> None:
    def pages() -> Iterator[list[int]]:
        yield [1]
        yield [2]
        raise ApiFailure(410, "Gone", "expired")

    got = ahead(pages())
    assert next(got) == [1]
    assert next(got) == [2]
    with pytest.raises(ApiFailure) as raised:
        next(got)
    assert raised.value.code == 410


def test_the_next_page_is_fetched_while_this_one_is_in_hand_but_no_further() -> None:
    fetched: list[int] = []
    moved = threading.Event()

    def pages() -> Iterator[list[int]]:
        for number in range(5):
            fetched.append(number)
            moved.set()
            yield [number]

    got = ahead(pages())
    assert next(got) == [0]
    # while page 0 is in hand, page 1 is fetched (and waits), page 2 is fetched at most: one page waits
    for _ in range(200):
        if len(fetched) >= 2:
            break
        moved.wait(0.05)
        moved.clear()
    assert 2 <= len(fetched) <= 3
    assert list(got) == [[1], [2], [3], [4]]
