"""The Market page's request read from its address and written back (precon.dashboard.market_view): defaults, the values
it cannot use said and replaced, and a round trip through the address for every request it can make."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from precon.dashboard import market_view as mv

TODAY = date(2026, 11, 27)


def test_the_default_is_the_last_two_years_by_month() -> None:
    request, problems = mv.request_from_params({}, TODAY)
    assert problems == []
    assert request == mv.MarketRequest("month", date(2024, 12, 1), date(2026, 11, 1), None)
    assert request.since() == "2024-12-01T00:00:00Z"
    assert request.until() == "2026-11-30T23:59:59Z"
    assert request.to_params(TODAY) == {}


def test_an_address_names_interval_period_and_grouping() -> None:
    params = {"interval": "quarter", "since": "2023-01", "until": "2024-12", "groupBy": "builder"}
    request, problems = mv.request_from_params(params, TODAY)
    assert problems == []
    assert (request.interval, request.first, request.last) == ("quarter", date(2023, 1, 1), date(2024, 12, 1))
    assert (request.group_by, request.group_label) == ("builders", "Builder")
    assert request.until() == "2024-12-31T23:59:59Z"
    assert request.to_params(TODAY) == params
    assert request.describe() == "Jan 2023 to Dec 2024, by quarter, by builder"


def test_a_day_in_the_address_means_its_month() -> None:
    request, _ = mv.request_from_params({"since": "2025-02-17", "until": "2025-02-03"}, TODAY)
    assert (request.first, request.last) == (date(2025, 2, 1), date(2025, 2, 1))
    assert request.until() == "2025-02-28T23:59:59Z"


def test_values_that_cannot_be_used_are_said_and_replaced_by_defaults() -> None:
    default = mv.default_request(TODAY)
    cases = {
        "interval": {"interval": "week"},
        "grouping": {"groupBy": "postalCode"},
        "written": {"since": "last year"},
        "backwards": {"since": "2025-06", "until": "2025-01"},
        "too long": {"since": "1990-01", "until": "2025-01"},
    }
    for name, params in cases.items():
        request, problems = mv.request_from_params(params, TODAY)
        assert len(problems) == 1, name
        assert request.interval == "month" and request.group is None, name
        assert (request.first, request.last) == (default.first, default.last), name
    assert "week" in mv.request_from_params(cases["interval"], TODAY)[1][0]
    assert "10 years" in mv.request_from_params(cases["too long"], TODAY)[1][0]


def test_ten_years_less_a_month_is_the_longest_period() -> None:
    request, problems = mv.request_from_params({"since": "2016-12", "until": "2026-11"}, TODAY)
    assert problems == [] and request.first == date(2016, 12, 1)
    _, problems = mv.request_from_params({"since": "2016-11", "until": "2026-11"}, TODAY)
    assert problems


months = st.dates(min_value=date(2000, 1, 1), max_value=date(2040, 12, 1)).map(lambda d: d.replace(day=1))


@given(
    interval=st.sampled_from(mv.INTERVALS),
    first=months,
    span=st.integers(min_value=0, max_value=12 * mv.MAX_YEARS - 1),
    group=st.sampled_from([None, *mv.GROUPS]),
)
def test_every_request_round_trips_through_the_address(
    interval: str, first: date, span: int, group: str | None
) -> None:
    request = mv.MarketRequest(interval, first, mv.add_months(first, span), group)
    again, problems = mv.request_from_params(request.to_params(TODAY), TODAY)
    assert problems == [] and again == request
    end = datetime.fromisoformat(request.until()).astimezone(UTC)
    assert end.date().replace(day=1) == request.last and (end + timedelta(seconds=1)).day == 1


def test_quarters_and_labels() -> None:
    assert mv.quarter_of(date(2025, 8, 1)) == date(2025, 7, 1)
    assert mv.quarter_label(date(2025, 8, 1)) == "Q3 2025"
    assert mv.interval_label(date(2025, 8, 1), "month") == "Aug 2025"
    assert mv.interval_label(date(2025, 8, 1), "quarter") == "Q3 2025"
