"""An account's usage and estimated cost over its last N days (admin only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import InvalidInput, Unavailable
from agentworks.usage.counts import COUNTERS, Counts, day_of, days_back

if TYPE_CHECKING:
    from agentworks.identity.models import Principal
    from agentworks.usage.costs import Cost
    from agentworks.usage.tally import UsageTally
    from agentworks.usage.usage_store import UsageStore
    from agentworks.usage.views import UsageCost, UsageReport


def check_days(days: int | None) -> int:
    n = limits.USAGE_DAYS_DEFAULT if days is None else days
    if not (1 <= n <= limits.USAGE_DAYS_MAX):
        raise InvalidInput(
            f"days must be 1–{limits.USAGE_DAYS_MAX} (today and the days before it).",
            field="days",
        )
    return n


def counters_view(counts: Counts) -> dict[str, int | float]:
    """The counters as the report shows them: connection time in minutes."""
    shown: dict[str, int | float] = {n: getattr(counts, n) for n in COUNTERS}
    shown["push_minutes"] = round(shown.pop("push_seconds") / 60, 2)
    return shown


def cost_view(cost: Cost) -> UsageCost:
    from agentworks.usage.views import UsageCost

    return UsageCost(
        total_usd=round(cost.total_usd, 6),
        api_gateway_usd=round(cost.api_gateway_usd, 6),
        lambda_usd=round(cost.lambda_usd, 6),
        dynamodb_usd=round(cost.dynamodb_usd, 6),
        step_functions_usd=round(cost.step_functions_usd, 6),
        storage_usd=round(cost.storage_usd, 6),
    )


class UsageReports:
    def __init__(
        self, store: UsageStore, clock: Clock = SYSTEM_CLOCK, pending: UsageTally | None = None
    ) -> None:
        self._store = store
        self._clock = clock
        self._pending = pending  # this process's read pages not written yet

    def flush_pending(self) -> None:
        """Writes this process's read tally now (at shutdown, agentworks.shutdown)."""
        if self._pending is not None:
            self._pending.flush()

    def report(
        self, principal: Principal, account: str | None = None, days: int | None = None
    ) -> UsageReport:
        """Today and the `days - 1` days before it. Account-wide administration (A3b): an
        admin without target bounds, of this very account; any other account answers
        like an unknown one."""
        # Loaded by the route that answers with them, not by every request's wiring.
        from agentworks.usage.costs import estimate
        from agentworks.usage.views import UsageCounters, UsageDay, UsageReport

        principal.require_account_admin()
        if account is not None and account != principal.account_id:
            raise Unavailable()
        self.flush_pending()  # what this process counted shows at once
        now = self._clock.now()
        window = days_back(day_of(now), check_days(days))
        found = self._store.days(principal.account_id, window[0], window[-1], now)
        daily = [found.get(day, Counts()) for day in window]
        total = sum(daily, Counts())
        return UsageReport(
            account_id=principal.account_id,
            first_day=window[0],
            last_day=window[-1],
            days=[
                UsageDay.model_validate(
                    {
                        "day": day,
                        "estimated_cost_usd": round(estimate(counts).total_usd, 6),
                        **counters_view(counts),
                    }
                )
                for day, counts in zip(window, daily, strict=True)
            ],
            total=UsageCounters.model_validate(counters_view(total)),
            estimated_cost=cost_view(estimate(total)),
        )
