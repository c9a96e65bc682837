"""The webhook operations: subscriptions, the profile trigger, and (ours) the delivery log and replay."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from precon.models import COLLECTIONS, WEBHOOK_EVENTS
from precon.service.errors import bad_request, not_found
from precon.service.responses import answer, envelope
from precon.service.routes.common import ServiceDep, operation
from precon.service.shaping import profile_object
from precon.service.webhook_targets import TargetPolicy, TargetRefused
from precon.service.webhooks import DeliveryWorker, Event, WebhookStore

ENVS = ("live", "sandbox")
NO_STORE = "no-store"
"""Subscriptions and deliveries change with every action: their answers are never kept by a cache (ours)."""
MAX_BODY_BYTES = 64 * 1024

router = APIRouter()


async def get_webhooks(request: Request) -> WebhookStore:
    webhooks: WebhookStore = request.app.state.webhooks
    return webhooks


async def get_policy(request: Request) -> TargetPolicy:
    policy: TargetPolicy = request.app.state.webhook_policy
    return policy


async def get_worker(request: Request) -> DeliveryWorker | None:
    """The delivery worker to wake when deliveries are stored, None where this process sends none."""
    worker: DeliveryWorker | None = request.app.state.webhook_worker
    return worker


WebhooksDep = Annotated[WebhookStore, Depends(get_webhooks)]
PolicyDep = Annotated[TargetPolicy, Depends(get_policy)]
WorkerDep = Annotated[DeliveryWorker | None, Depends(get_worker)]


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise bad_request(f"the request body is over {MAX_BODY_BYTES} bytes")
    try:
        body = orjson.loads(raw or b"null")
    except orjson.JSONDecodeError as error:
        raise bad_request(f"the request body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    return body


def _required_text(body: dict[str, Any], name: str, allowed: tuple[str, ...] | None = None) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise bad_request(f"{name} is required" + (f": one of {', '.join(allowed)}" if allowed else ""))
    value = value.strip()
    if allowed is not None and value not in allowed:
        raise bad_request(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def route(
    name: str, method: str, example: dict[str, Any] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a webhook operation under every version and province, as the read operations are."""
    # Bodies are read and checked by the operations themselves (a clear 400, not a 422): documented here.
    extra = None
    if example is not None:
        extra = {
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"type": "object"}, "example": example}},
            }
        }
    return operation(router, name, method, route_name=f"{name}_{method.lower()}", openapi_extra=extra)


@route("webhooks", "POST", {"env": "live", "targetUrl": "https://example.com/hooks", "event": "profile.updated"})
async def create_subscription(
    request: Request, version: str, province: str, service: ServiceDep, webhooks: WebhooksDep, policy: PolicyDep
) -> Response:
    call = service.call(request, version, province)
    body = await _json_body(request)
    env = _required_text(body, "env", ENVS)
    event = _required_text(body, "event", WEBHOOK_EVENTS)
    try:
        target = policy.check_url(body.get("targetUrl"))  # type: ignore[arg-type]
    except TargetRefused as refused:
        raise bad_request(f"targetUrl: {refused}") from None
    subscription = webhooks.subscribe(call.key.key_id, env, event, target)
    return answer(request, subscription.public(with_secret=True), NO_STORE)


@route("webhooks", "GET")
def list_subscriptions(
    request: Request, version: str, province: str, service: ServiceDep, webhooks: WebhooksDep
) -> Response:
    call = service.call(request, version, province)
    subscriptions = webhooks.subscriptions(key_id=call.key.key_id)
    return answer(request, {"results": [s.public() for s in subscriptions]}, NO_STORE)


@route("webhooks", "DELETE")
def delete_subscription(
    request: Request,
    version: str,
    province: str,
    service: ServiceDep,
    webhooks: WebhooksDep,
    id: str | None = Query(None, description="The subscription"),
) -> Response:
    call = service.call(request, version, province)
    subscription_id = call.params.required("id")
    if not webhooks.unsubscribe(call.key.key_id, subscription_id):
        raise not_found(f"Subscription {subscription_id!r} not found")
    return answer(request, {"id": subscription_id, "deleted": True}, NO_STORE)


@route("trigger_profile_webhook", "POST", {"id": "5fH9CC8jgOxPuxqyMk70", "collection": "Builders"})
async def trigger_profile_webhook(
    request: Request, version: str, province: str, service: ServiceDep, webhooks: WebhooksDep, worker: WorkerDep
) -> Response:
    call = service.call(request, version, province)
    body = await _json_body(request)
    profile_id = _required_text(body, "id")
    collection = _required_text(body, "collection", (*COLLECTIONS, "Owners"))
    record = call.store.find_profile(profile_id, collection, call.province)
    if record is None:
        raise not_found(f"Profile {profile_id!r} not found in {collection}")
    env = "sandbox" if call.version == "v1-sandbox" else "live"
    subscribers = webhooks.subscriptions(key_id=call.key.key_id, event="profile.updated", env=env)
    data = {"collection": collection, "profile": profile_object(record, call.media)}
    [(event_id, count)] = webhooks.publish(
        [Event("profile.updated", env, data, subscribers)], service.settings.webhook_first_delay
    )
    if worker is not None:
        worker.wake()
    return answer(request, {"eventId": event_id, "deliveries": count}, NO_STORE)


@route("webhooks/deliveries", "GET")
def delivery_log(
    request: Request,
    version: str,
    province: str,
    service: ServiceDep,
    webhooks: WebhooksDep,
    subscription: str | None = Query(None, description="Only this subscription's deliveries"),
    page: str | None = Query(None),
    perPage: str | None = Query(None),
) -> Response:
    call = service.call(request, version, province)
    page_number, per_page = call.params.page()
    total, results = webhooks.deliveries(
        call.key.key_id, call.params.text("subscription"), page_number * per_page, per_page
    )
    return answer(request, envelope(results, total, page_number, per_page), NO_STORE)


@route("webhooks/deliveries/replay", "POST", {"id": "msg_…"})
async def replay_delivery(
    request: Request, version: str, province: str, service: ServiceDep, webhooks: WebhooksDep, worker: WorkerDep
) -> Response:
    call = service.call(request, version, province)
    body = await _json_body(request)
    delivery_id = _required_text(body, "id")
    if not webhooks.replay(call.key.key_id, delivery_id):
        raise not_found(
            f"Delivery {delivery_id!r} not found, already waiting to be sent, or its subscription was deleted"
        )
    if worker is not None:
        worker.wake()
    _, [delivery] = webhooks.deliveries(call.key.key_id, None, 0, 1, delivery_id=delivery_id)
    return answer(request, delivery, NO_STORE)
