"""The webhook operations of :class:`precon.client.Client`: subscriptions, the profile trigger, and (this project's
service only) the delivery log, replay and send-now."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from precon.client.models import (
    DeliveryPage,
    ResponseMeta,
    WebhookDeletion,
    WebhookDelivery,
    WebhookSubscription,
    WebhookTrigger,
)
from precon.client.retries import IDEMPOTENCY_HEADER

ModelT = TypeVar("ModelT", bound=BaseModel)


def parsed(model: type[ModelT], data: Any, meta: ResponseMeta) -> ModelT:
    """An answer as its model, carrying the response's request id, status and headers."""
    record = model.model_validate(data)
    record._meta = meta  # type: ignore[attr-defined]
    return record


class WebhookOperations:
    """Mixed into the client, whose :meth:`call` (the retry policy, the errors) each operation goes through."""

    call: Callable[..., tuple[Any, ResponseMeta]]
    """The client's: one operation with the retry policy and the errors."""

    _parse = staticmethod(parsed)

    def list_webhooks(self, *, version: str | None = None, province: str | None = None) -> list[WebhookSubscription]:
        data, meta = self.call("GET", "webhooks", version=version, province=province)
        return [self._parse(WebhookSubscription, item, meta) for item in data.get("results", [])]

    def create_webhook(
        self,
        target_url: str,
        event: str,
        env: Literal["live", "sandbox"] = "live",
        *,
        filter_query: str | None = None,
        unit_filter: str | None = None,
        fields: Sequence[str] | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> WebhookSubscription:
        """A subscription; with ``filter_query``, ``unit_filter`` or ``fields`` (listing events, this project's
        service only) it hears only of the listings matching the filters before or after a change, and of changes
        to those fields (``listing.matched``: a listing coming to match)."""
        body: dict[str, Any] = {"env": env, "targetUrl": target_url, "event": event}
        selection = {"filterQuery": filter_query, "unitFilter": unit_filter, "fields": fields}
        body.update(
            {name: list(value) if name == "fields" else value for name, value in selection.items() if value is not None}
        )
        data, meta = self.call("POST", "webhooks", body=body, version=version, province=province)
        return self._parse(WebhookSubscription, data, meta)

    def delete_webhook(self, id: str, *, version: str | None = None, province: str | None = None) -> WebhookDeletion:
        data, meta = self.call("DELETE", "webhooks", {"id": id}, version=version, province=province)
        return self._parse(WebhookDeletion, data, meta)

    def trigger_profile_webhook(
        self,
        id: str,
        collection: str,
        *,
        idempotency_key: str | None = None,
        version: str | None = None,
        province: str | None = None,
    ) -> WebhookTrigger:
        """Sends ``profile.updated`` for a profile. The request carries an ``Idempotency-Key`` (``idempotency_key``,
        else a new UUID), the same on each attempt, so it is retried as a read is: a connection that failed, even
        after the service had the request, or a 5xx, is sent again, and this project's service does the trigger at
        most once (a service that ignores the header may do it twice)."""
        body = {"id": id, "collection": collection}
        headers = {IDEMPOTENCY_HEADER: idempotency_key or str(uuid.uuid4())}
        data, meta = self.call(
            "POST", "trigger_profile_webhook", body=body, version=version, province=province, headers=headers
        )
        return self._parse(WebhookTrigger, data, meta)

    def webhook_deliveries(
        self,
        *,
        subscription: str | None = None,
        page: int = 0,
        per_page: int = 20,
        version: str | None = None,
        province: str | None = None,
    ) -> DeliveryPage:
        """The delivery log of this key's subscriptions, newest first (this project's service only)."""
        params = {"subscription": subscription, "page": page, "perPage": per_page}
        data, meta = self.call("GET", "webhooks/deliveries", params, version=version, province=province)
        return self._parse(DeliveryPage, data, meta)

    def replay_delivery(self, id: str, *, version: str | None = None, province: str | None = None) -> WebhookDelivery:
        """Sends any delivery again, at once: a delivered or failed one is pending again, a pending one is attempted
        now instead of at its next retry (this project's service only). NotFound if its subscription was deleted."""
        data, meta = self.call(
            "POST", "webhooks/deliveries/replay", body={"id": id}, version=version, province=province
        )
        return self._parse(WebhookDelivery, data, meta)

    def send_delivery_now(self, id: str, *, version: str | None = None, province: str | None = None) -> WebhookDelivery:
        """Attempts a pending delivery now instead of at its next scheduled retry; the retries carry on after it if
        it fails (this project's service only). NotFound if there is no such delivery or it is no longer pending
        (delivered, failed or cancelled in the meantime: nothing is sent)."""
        data, meta = self.call(
            "POST", "webhooks/deliveries/send_now", body={"id": id}, version=version, province=province
        )
        return self._parse(WebhookDelivery, data, meta)
