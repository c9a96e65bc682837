"""The webhook operations: subscriptions, the profile trigger, and (ours) the delivery log and replay."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Header, Request
from pydantic import AfterValidator, BaseModel, Field
from starlette.responses import Response

from precon.client.models import WEBHOOK_EVENTS
from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.operations import NOT_FOUND, operation
from precon.service.api.parameters import Collection
from precon.service.api.pipeline import calls_of
from precon.service.api.requests import (
    DELETE_WEBHOOK,
    WEBHOOK_DELIVERIES,
    WEBHOOKS,
    WebhookRequest,
    webhook_selection,
)
from precon.service.api.responses import answer, encode, envelope
from precon.service.api.shaping import profile_object
from precon.service.errors import bad_request, not_found
from precon.service.webhooks.delivery import DeliveryWorker
from precon.service.webhooks.model import Event, IdempotencyKey, StoredAnswer
from precon.service.webhooks.sqlite import WebhookStore
from precon.service.webhooks.targets import TargetPolicy, TargetRefused

WebhookEvent = Enum("WebhookEvent", {name.replace(".", "_"): name for name in WEBHOOK_EVENTS}, type=str)  # type: ignore[misc]
NO_STORE = "no-store"
"""Subscriptions and deliveries change with every action: their answers are never kept by a cache (ours)."""
MAX_URL_LENGTH = 2048
IDEMPOTENCY_HEADER = "Idempotency-Key"
"""With it, a POST's effect and answer are stored together: a repeat with the same key gets that answer, marked
``Idempotent-Replayed: true``, and does nothing again (kept 24 h; per API key)."""
MAX_IDEMPOTENCY_KEY = 255

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


KeyCall = Annotated[Call[WebhookRequest], Depends(calls_of(WEBHOOKS))]
"""A webhook operation's call: the key (its subscriptions are the key's), and the product it names."""
DeleteCall = Annotated[Call[WebhookRequest], Depends(calls_of(DELETE_WEBHOOK))]
DeliveriesCall = Annotated[
    Call[WebhookRequest],
    Depends(calls_of(WEBHOOK_DELIVERIES)),
]

WebhooksDep = Annotated[WebhookStore, Depends(get_webhooks)]
PolicyDep = Annotated[TargetPolicy, Depends(get_policy)]
WorkerDep = Annotated[DeliveryWorker | None, Depends(get_worker)]


def without_nul(text: str) -> str:
    """An id in a body holds no NUL character: no id holds one, and PostgreSQL refuses them in text. (A target URL
    holding one is refused by the target policy, with the other malformed URLs.)"""
    if "\x00" in text:
        raise ValueError("holds a NUL character, which no value may")
    return text


Text = Annotated[str, AfterValidator(without_nul)]


class NewSubscriptionBody(BaseModel):
    env: Literal["live", "sandbox"] = Field(description="Which catalogue's events: `live` or `sandbox`")
    targetUrl: str = Field(max_length=MAX_URL_LENGTH, description="An https URL at a public address")
    event: WebhookEvent
    filterQuery: Text | None = Field(
        None,
        description="(ours) Only listings that match this filter (the search grammar) before or after the change; "
        "listing events only",
    )
    unitFilter: Text | None = Field(
        None, description="(ours) Only listings with a floor plan (and unit) that matches, before or after the change"
    )
    fields: list[Text] | None = Field(
        None,
        description="(ours) Only changes to these fields of a listing, a floor plan or a unit (`startPrice`, "
        "`status`, `price` ...); deliveries carry only their entries in `data.changes`",
    )

    model_config = {
        "json_schema_extra": {
            "examples": [{"env": "live", "targetUrl": "https://example.com/hooks", "event": "profile.updated"}]
        }
    }


class TriggerBody(BaseModel):
    id: Text = Field(pattern=r"\S", description="The profile's id")
    collection: Collection

    model_config = {"json_schema_extra": {"examples": [{"id": "5fH9CC8jgOxPuxqyMk70", "collection": "Builders"}]}}


class ReplayBody(BaseModel):
    id: Text = Field(pattern=r"\S", description="A delivery's id, from the delivery log")

    model_config = {"json_schema_extra": {"examples": [{"id": "msg_2f1c0d9e8b7a4c3d2e1f0a9b8c7d6e5f"}]}}


def target_refusal(url: str, refused: TargetRefused, policy: TargetPolicy) -> str:
    """Why a target URL is refused, said so that a person knows what to write instead (``targetUrl: ...``)."""
    text = url.strip()
    schemes = " or ".join(f"{scheme}://" for scheme in (("https", "http") if policy.allow_http else ("https",)))
    if not text:
        return "targetUrl: enter the URL that receives the deliveries (https://...)"
    if "://" not in text:
        return f"targetUrl: {text!r} is not a whole URL: start it with {schemes} (e.g. https://example.com/hooks)"
    return f"targetUrl: {str(refused).removeprefix('targetUrl ')}"


IdempotencyHeader = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_HEADER,
        description="(ours) Any 1-255 printable ASCII characters (a UUID, say): a repeat of the request with the "
        "same key from the same API key, on any replica, within 24 h, gets the first answer again (marked "
        "`Idempotent-Replayed: true`) and fires no second event; with another body, a 400.",
    ),
]


def idempotency_of(request: Request, value: str | None, key_id: int, body: BaseModel) -> IdempotencyKey | None:
    """The request's ``Idempotency-Key`` (None without one), checked: 1 to 255 printable ASCII characters (a 400
    says what is wrong otherwise). Its fingerprint is the operation and the body as validated."""
    if value is None:
        return None
    if not value:
        raise bad_request(
            f"{IDEMPOTENCY_HEADER}: it is empty; send 1 to {MAX_IDEMPOTENCY_KEY} characters, or no header"
        )
    if len(value) > MAX_IDEMPOTENCY_KEY:
        raise bad_request(
            f"{IDEMPOTENCY_HEADER}: it is {len(value)} characters long, over the {MAX_IDEMPOTENCY_KEY} allowed"
        )
    if not all(" " <= c <= "~" for c in value):
        raise bad_request(f"{IDEMPOTENCY_HEADER}: only printable ASCII characters are allowed (a UUID is a good key)")
    operation = str(getattr(request.scope.get("route"), "name", request.url.path))
    digest = hashlib.sha256(orjson.dumps([operation, body.model_dump(mode="json")], option=orjson.OPT_SORT_KEYS))
    return IdempotencyKey(key_id, value, digest.hexdigest())


def replayed(request: Request, stored: StoredAnswer, idempotency: IdempotencyKey) -> Response:
    """The stored answer of an earlier request with this ``Idempotency-Key``: the same status and body, marked
    ``Idempotent-Replayed: true``; a 400 if that request was another (another operation or body)."""
    if stored.fingerprint != idempotency.fingerprint:
        raise bad_request(
            f"{IDEMPOTENCY_HEADER}: this key was used within the last 24 h for another request (another operation "
            "or body); send a new key for a new request"
        )
    return Response(
        stored.body,
        status_code=stored.status,
        media_type="application/json",
        headers={"Cache-Control": NO_STORE, "Idempotent-Replayed": "true"},
    )


def route(
    name: str, method: str, answer_model: Any, summary: str, errors: dict[int | str, dict[str, Any]] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a webhook operation under every version and province, as the read operations are."""
    return operation(
        router, name, method, answer_model, summary=summary, route_name=f"{name}_{method.lower()}", errors=errors
    )


@route("webhooks", "POST", wire.NewSubscription, "Subscribe a URL to an event")
async def create_subscription(
    call: KeyCall,
    body: NewSubscriptionBody,
    webhooks: WebhooksDep,
    policy: PolicyDep,
) -> Response:
    try:
        target = await policy.check_url_async(body.targetUrl)
    except TargetRefused as refused:
        raise bad_request(target_refusal(body.targetUrl, refused, policy)) from None
    selection = webhook_selection(call.version, body.event.value, body.filterQuery, body.unitFilter, body.fields)
    subscription = webhooks.subscribe(call.key.key_id, body.env, body.event.value, target, selection=selection)
    return answer(call.request, subscription.public(with_secret=True), NO_STORE)


@route("webhooks", "GET", wire.Subscriptions, "The key's subscriptions")
def list_subscriptions(call: KeyCall, webhooks: WebhooksDep) -> Response:
    subscriptions = webhooks.subscriptions(key_id=call.key.key_id)
    return answer(call.request, {"results": [s.public() for s in subscriptions]}, NO_STORE)


@route("webhooks", "DELETE", wire.Deleted, "Delete a subscription", NOT_FOUND)
def delete_subscription(
    call: DeleteCall,
    webhooks: WebhooksDep,
) -> Response:
    subscription_id = call.params.id.strip()
    if not webhooks.unsubscribe(call.key.key_id, subscription_id):
        raise not_found(f"Subscription {subscription_id!r} not found")
    return answer(call.request, {"id": subscription_id, "deleted": True}, NO_STORE)


@route("trigger_profile_webhook", "POST", wire.Triggered, "Send profile.updated for a profile", NOT_FOUND)
async def trigger_profile_webhook(
    call: KeyCall,
    body: TriggerBody,
    webhooks: WebhooksDep,
    worker: WorkerDep,
    idempotency_key: IdempotencyHeader = None,
) -> Response:
    idempotency = idempotency_of(call.request, idempotency_key, call.key.key_id, body)
    if idempotency is not None and (stored := webhooks.stored_answer(idempotency)) is not None:
        return replayed(call.request, stored, idempotency)
    profile_id, collection = body.id.strip(), body.collection.value
    record = call.store.find_profile(profile_id, collection, call.province)
    if record is None:
        raise not_found(f"Profile {profile_id!r} not found in {collection}")
    env = "sandbox" if call.version == "v1-sandbox" else "live"
    subscribers = webhooks.subscriptions(key_id=call.key.key_id, event="profile.updated", env=env)
    data = {"collection": collection, "profile": profile_object(record, call.media)}
    events = [Event("profile.updated", env, data, subscribers)]
    if idempotency is None:
        [(event_id, count)] = webhooks.publish(events, call.service.settings.webhook_first_delay)
        stored = None
    else:
        stored = webhooks.publish_once(
            events,
            call.service.settings.webhook_first_delay,
            idempotency,
            lambda published: encode({"eventId": published[0][0], "deliveries": published[0][1]}),
        )
        if stored.replayed:
            return replayed(call.request, stored, idempotency)
    if worker is not None:
        worker.wake()
    if stored is not None:
        return answer(call.request, orjson.loads(stored.body), NO_STORE)
    return answer(call.request, {"eventId": event_id, "deliveries": count}, NO_STORE)


@route("webhooks/deliveries", "GET", wire.Deliveries, "(ours) The delivery log, newest first")
def delivery_log(
    call: DeliveriesCall,
    webhooks: WebhooksDep,
) -> Response:
    page_number, per_page = call.params.page_and_size()
    total, results = webhooks.deliveries(call.key.key_id, call.params.subscription, page_number * per_page, per_page)
    return answer(call.request, envelope(results, total, page_number, per_page), NO_STORE)


def queued_delivery(
    request: Request, key_id: int, delivery_id: str, webhooks: WebhookStore, worker: DeliveryWorker | None
) -> Response:
    """The answer once a delivery is queued to go at once: the delivery as the log shows it (read before the worker
    is woken, so that it is shown queued, not half-sent), then the worker woken."""
    _, [delivery] = webhooks.deliveries(key_id, None, 0, 1, delivery_id=delivery_id)
    if worker is not None:
        worker.wake()
    return answer(request, delivery, NO_STORE)


@route("webhooks/deliveries/replay", "POST", wire.Delivery, "(ours) Send a delivery again, at once", NOT_FOUND)
async def replay_delivery(
    call: KeyCall,
    body: ReplayBody,
    webhooks: WebhooksDep,
    worker: WorkerDep,
) -> Response:
    """Any delivery (delivered, failed or pending) is sent again at once; a pending one is attempted now instead of
    at its next retry, as send_now does."""
    delivery_id = body.id.strip()
    if not webhooks.replay(call.key.key_id, delivery_id):
        raise not_found(f"Delivery {delivery_id!r} not found, or its subscription was deleted")
    return queued_delivery(call.request, call.key.key_id, delivery_id, webhooks, worker)


@route(
    "webhooks/deliveries/send_now",
    "POST",
    wire.Delivery,
    "(ours) Attempt a pending delivery now, not at its next retry",
    NOT_FOUND,
)
async def send_delivery_now(
    call: KeyCall,
    body: ReplayBody,
    webhooks: WebhooksDep,
    worker: WorkerDep,
) -> Response:
    """Only a pending delivery: one delivered, failed or cancelled in the meantime is not sent (a 404 says which),
    so a page that showed it pending a moment ago cannot send a delivered one twice."""
    delivery_id = body.id.strip()
    outcome = webhooks.send_now(call.key.key_id, delivery_id)
    if outcome is None:
        raise not_found(f"Delivery {delivery_id!r} not found")
    if outcome not in ("due", "sending"):
        raise not_found(
            f"Delivery {delivery_id!r} is not waiting to be sent: it is {outcome}"
            + ("; replay it to send it again" if outcome != "cancelled" else "")
        )
    return queued_delivery(call.request, call.key.key_id, delivery_id, webhooks, worker)
