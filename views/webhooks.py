"""Webhooks of this API key: its subscriptions, a new one (whose signing secret is shown once), deleting one after
a confirmation, a test event for a picked profile, and the delivery log with every attempt, which refreshes by
itself (a fragment rerun every few seconds, unless paused): a pending delivery can be sent now, any delivery
replayed.

Every action runs in its button's callback, before the page is drawn, so the page always shows the state after
it; what the action came to is kept for one run and shown next to the section it belongs to. The secret of a new
subscription lives in this session's state only (never in the address or a log) until it is dismissed or
another subscription is created.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import streamlit as st
from pydantic import ValidationError

from components import api, auth, saved_alerts
from components.formatting import markdown_text
from components.webhook_log import (
    attempts_frame,
    deliveries_frame,
    inline_code,
    link_log_filter,
    linked_log_filter,
    next_attempt,
    refusal,
    status_badge,
    subscription_label,
    subscriptions_frame,
    when,
)
from precon.client.errors import BadRequest, NotFound, PreconError, Timeout
from precon.client.models import COLLECTIONS, WEBHOOK_EVENTS, Page, Profile, WebhookDelivery, WebhookSubscription

ENVS = ("live", "sandbox")
ENV_LABELS = {"live": "live (v1 and v1-lite catalogue)", "sandbox": "sandbox (v1-sandbox sample data)"}
TRIGGER_EVENT = "profile.updated"
COLLECTION_LABELS = {
    "Architects": "Architects",
    "Builders": "Builders",
    "InteriorDesigners": "Interior designers",
    "Marketers": "Marketers",
    "SalesCentres": "Sales centres",
    "SalesCompanies": "Sales companies",
}
# (No bare string literals in this file: Streamlit's magic would write them on the page.)
PROFILE_CHOICES = 1000  # profiles offered in the picker at once (the most one page holds); a name search narrows
LOG_PAGE_SIZE = 20
LOG_REFRESH_S = 5  # the delivery log reruns by itself this often, so a pending delivery changes state on screen
URL_EXAMPLE = "https://example.com/hooks"

# Session state: each widget's key, the secret on show, and what the last action of each section came to.
ENV, EVENT, URL = "wh_env", "wh_event", "wh_url"
DELETE_PICK, DELETE_CONFIRM = "wh_delete_pick", "wh_delete_confirm"
COLLECTION, PROFILE_SEARCH = "wh_collection", "wh_profile_search"
LOG_FILTER, LOG_PAGE, LOG_LIVE = "wh_log_subscription", "wh_log_page", "wh_log_live"
SECRET = "wh_new_secret"
OUTCOMES = "wh_outcomes"

Section = Literal["create", "delete", "trigger", "log"]


@dataclass(frozen=True)
class Outcome:
    kind: Literal["success", "info", "warning", "error"]
    text: str = ""
    error: PreconError | None = None


# -- actions (run in callbacks, before the page is drawn) ---------------------------------------------------------


def _say(section: Section, outcome: Outcome) -> None:
    st.session_state.setdefault(OUTCOMES, {})[section] = outcome


def _attempt(section: Section, action: Callable[[], Any], unsure: str, gone: str | None = None) -> Any | None:
    """The action's answer; on failure, why, kept for the section (``unsure``: what may have happened anyway;
    ``gone``: what a 404 means here, said as information rather than as an error). Every action is an admin's:
    the role is checked here again, whatever drove the callback."""
    try:
        auth.require_admin()
    except auth.Denied as denied:
        _say(section, Outcome("error", str(denied)))
        return None
    try:
        return action()
    except NotFound as error:
        _say(section, Outcome("info", gone) if gone else Outcome("error", "", error))
    except Timeout as error:
        _say(section, Outcome("error", unsure, error))
    except PreconError as error:
        _say(section, Outcome("error", "", error))
    except ValidationError:
        _say(section, Outcome("error", "**The service answered with something this page cannot read.** " + unsure))
    except Exception as error:  # an action's failure is shown as a message, never as a traceback
        _say(section, Outcome("error", f"**Something went wrong** ({type(error).__name__}). {unsure}"))
    return None


def url_problem(target: str) -> str | None:
    """What is wrong with a target URL that the page can tell before asking the service (which checks the rest)."""
    if not target:
        return "**Enter the URL that receives the deliveries** (`https://...`)."
    if "://" not in target:
        return (
            f"**{inline_code(target)} is not a whole URL.** Start it with `https://`, as in {inline_code(URL_EXAMPLE)}."
        )
    return None


def create() -> None:
    target = (st.session_state.get(URL) or "").strip()
    event, env = st.session_state.get(EVENT), st.session_state.get(ENV)
    problem = url_problem(target)
    if problem:
        _say("create", Outcome("warning", problem))
        return
    created: WebhookSubscription | None = _attempt(
        "create",
        lambda: api.call_uncached("create_webhook", target_url=target, event=event, env=env),
        "The subscription may have been created anyway: check the list above before trying again.",
    )
    if created is None:
        return
    # Only the newest secret is kept, and only here: not in the address, not in a log.
    st.session_state[SECRET] = {
        "id": created.id,
        "secret": created.secret or "",
        "event": created.event,
        "env": created.env,
        "target": created.targetUrl,
    }
    st.session_state[URL] = ""
    _say(
        "create",
        Outcome("success", f"Subscribed {inline_code(created.targetUrl)} to **{created.event}** ({created.env})."),
    )


def dismiss_secret() -> None:
    st.session_state.pop(SECRET, None)


def forget_confirmation() -> None:
    st.session_state[DELETE_CONFIRM] = False


def delete(subscriptions: dict[str, WebhookSubscription]) -> None:
    chosen = st.session_state.get(DELETE_PICK)
    confirmed = st.session_state.get(DELETE_CONFIRM)
    st.session_state[DELETE_CONFIRM] = False
    if not chosen or not confirmed:
        _say("delete", Outcome("warning", "Pick a subscription and tick the confirmation first."))
        return
    subscription = subscriptions.get(chosen)
    target = inline_code(subscription.targetUrl) if subscription else "its target"
    deleted = _attempt(
        "delete",
        lambda: api.call_uncached("delete_webhook", id=chosen),
        "The subscription may have been deleted anyway: check the list above.",
        gone=f"Subscription `{chosen}` was already deleted.",
    )
    if deleted is not None:
        _say("delete", Outcome("success", f"Deleted subscription `{chosen}`: no new events go to {target}."))
    elif st.session_state[OUTCOMES]["delete"].kind != "info":
        return  # it failed: the pick stays, to try again
    # Deleted, now or before: forget everything about it.
    st.session_state[DELETE_PICK] = None
    if (st.session_state.get(SECRET) or {}).get("id") == chosen:
        dismiss_secret()
    if st.session_state.get(LOG_FILTER) == chosen:
        st.session_state[LOG_FILTER] = ""


def trigger(collection: str, profile_id: str, name: str, env: str) -> None:
    fired = _attempt(
        "trigger",
        lambda: api.call_uncached("trigger_profile_webhook", id=profile_id, collection=collection),
        "The event may have been queued anyway: check the delivery log below.",
    )
    if fired is None:
        return
    what = f"Event **{TRIGGER_EVENT}** for {markdown_text(name)}"
    if fired.deliveries:
        plural = "subscription" if fired.deliveries == 1 else "subscriptions"
        text = f"{what} queued to {fired.deliveries} {plural} (event `{fired.eventId}`); see the delivery log below."
        _say("trigger", Outcome("success", text))
    else:
        text = f"{what} was not sent: no {env} subscription of this key listens for {TRIGGER_EVENT}."
        _say("trigger", Outcome("warning", text))


def replay(delivery_id: str) -> None:
    replayed = _attempt(
        "log",
        lambda: api.call_uncached("replay_delivery", id=delivery_id),
        "It may be queued anyway: the log below shows its state.",
        gone=f"Delivery `{delivery_id}` was not replayed: it is gone, or its subscription was deleted.",
    )
    if replayed is not None:
        text = f"Delivery `{delivery_id}` is being sent again, at once; the log below shows how it goes."
        _say("log", Outcome("success", text))


def send_now(delivery_id: str) -> None:
    sent = _attempt(
        "log",
        lambda: api.call_uncached("send_delivery_now", id=delivery_id),
        "It may be being sent anyway: the log below shows its state.",
        gone=(
            f"Delivery `{delivery_id}` was not sent now: it is no longer waiting to be sent (delivered, failed or "
            "cancelled meanwhile). The log below shows its state; replay it to send it again."
        ),
    )
    if sent is not None:
        text = f"Delivery `{delivery_id}` is being sent now, instead of at its next retry."
        _say("log", Outcome("success", text))


# -- drawing ------------------------------------------------------------------------------------------------------


def render_outcome(section: Section) -> None:
    """What this section's last action came to, once."""
    outcome: Outcome | None = st.session_state.setdefault(OUTCOMES, {}).pop(section, None)
    if outcome is None:
        return
    if outcome.error is not None:
        if isinstance(outcome.error, BadRequest):
            what = "this subscription" if section == "create" else "this request"
            field, why = refusal(outcome.error.message)
            said = f"{field}: {markdown_text(why)}" if field else markdown_text(why)
            st.error(f"**The service refused {what}.** {said}", icon="🚫")
        else:
            api.show_error(outcome.error)
        if outcome.text:
            st.warning(outcome.text, icon="❔")
        return
    show = {"success": st.success, "info": st.info, "warning": st.warning, "error": st.error}[outcome.kind]
    show(outcome.text)


def load_subscriptions() -> list[WebhookSubscription]:
    """This key's subscriptions; when they cannot be read, the page says why and stops (nothing else would work)."""
    try:
        subscriptions: list[WebhookSubscription] = api.call_uncached("list_webhooks")
    except NotFound as error:
        st.error(
            f"**This service offers no webhooks.** {markdown_text(error.message)}\n\n"
            "Webhooks need a deployment of the listings API that has them; check PRECON_API_URL.",
            icon="⚠️",
        )
        st.stop()
    except PreconError as error:
        api.show_error(error)
        st.stop()
    except ValidationError:
        st.error("**The service's list of subscriptions could not be read.** Try again in a moment.", icon="⚠️")
        st.stop()
    return subscriptions


def render_subscriptions(subscriptions: list[WebhookSubscription]) -> None:
    st.subheader("Subscriptions")
    if not subscriptions:
        st.info("This key has no subscriptions yet: create one below.", icon="🪝")
        return
    st.dataframe(
        saved_alerts.with_saved_search_column(subscriptions_frame(subscriptions)),
        placeholder="—",
        hide_index=True,
        width="stretch",
        column_config={
            "id": st.column_config.TextColumn("Id"),
            "event": st.column_config.TextColumn("Event"),
            "env": st.column_config.TextColumn("Env"),
            "created": st.column_config.TextColumn("Created"),
            "target": st.column_config.TextColumn("Target URL", width="large"),
            "only": st.column_config.TextColumn("Only", help="A filtered subscription's filters and fields"),
            "saved_search": st.column_config.TextColumn("Saved search", help="The saved search it alerts for"),
        },
        key="wh_subscriptions_table",
    )


def render_secret() -> None:
    shown = st.session_state.get(SECRET)
    if not shown:
        return
    with st.container(border=True):
        st.warning(
            "**Copy this signing secret now: it will not be shown again.** The receiver at "
            f"{inline_code(shown['target'])} needs it to check the `webhook-signature` header of every delivery "
            "(Standard Webhooks) and reject forged ones.",
            icon="🔐",
        )
        if shown["secret"]:
            st.code(shown["secret"], language=None, wrap_lines=True)
        else:
            st.error("The service sent no secret for this subscription: delete it and create another.")
        st.caption(f"Subscription `{shown['id']}` · {shown['event']} · {shown['env']}")
        st.button("I have stored the secret", icon="✅", on_click=dismiss_secret, key="wh_secret_dismiss")


def render_create(embedded: bool) -> None:
    st.markdown("##### New subscription")
    with st.form("wh_create_form", clear_on_submit=False):
        st.selectbox("Environment", ENVS, format_func=ENV_LABELS.get, key=ENV)
        st.selectbox("Event", WEBHOOK_EVENTS, index=WEBHOOK_EVENTS.index(TRIGGER_EVENT), key=EVENT)
        st.text_input("Target URL", key=URL, placeholder=URL_EXAMPLE, max_chars=2048)
        allowed = "The URL that receives the deliveries: `https://` and a public address."
        if embedded:
            allowed += " The embedded development service also accepts `http` and loopback receivers."
        st.caption(allowed)
        st.form_submit_button("Create subscription", type="primary", icon="➕", on_click=create, key="wh_create_button")
    render_outcome("create")
    render_secret()


DESTRUCTIVE_STYLE = """<style>
.st-key-wh_delete_button button:enabled { background: #b3261e; border-color: #b3261e; color: #fff; }
.st-key-wh_delete_button button:enabled:hover { background: #8c1d18; border-color: #8c1d18; color: #fff; }
</style>"""
"""The delete button in red, not the theme's green: it cannot be undone (Streamlit names a keyed element's container
``st-key-<key>``)."""


def render_delete(subscriptions: dict[str, WebhookSubscription]) -> None:
    st.markdown("##### Delete a subscription")
    st.html(DESTRUCTIVE_STYLE)
    if not subscriptions:
        st.caption("Nothing to delete.")
        render_outcome("delete")
        return
    if st.session_state.get(DELETE_PICK) not in subscriptions:
        st.session_state[DELETE_PICK] = None
    with st.container(border=True):
        chosen = st.selectbox(
            "Subscription",
            list(subscriptions),
            index=None,
            format_func=lambda id: subscription_label(subscriptions[id]),
            placeholder="Pick the subscription to delete",
            key=DELETE_PICK,
            on_change=forget_confirmation,
        )
        subscription = subscriptions[chosen] if chosen else None
        if subscription is not None:
            st.error(
                f"**This deletes subscription `{subscription.id}`**: **{subscription.event}** "
                f"({subscription.env}) to {inline_code(subscription.targetUrl)}, created "
                f"{when(subscription.createdAt)}.",
                icon="🗑️",
            )
        confirmed = st.checkbox(
            "I understand deliveries stop: no new events go to this URL, deliveries still waiting are cancelled, "
            "and it cannot be restored (a new subscription gets a new secret).",
            key=DELETE_CONFIRM,
            disabled=not chosen,
        )
        st.button(
            f"Delete subscription {subscription.id}" if subscription else "Delete subscription",
            icon=":material/delete_forever:",
            type="primary",
            disabled=not (chosen and confirmed),
            on_click=delete,
            args=(subscriptions,),
            key="wh_delete_button",
            help="Deletes the subscription for good, once the box above is ticked.",
        )
    render_outcome("delete")


def profile_label(profile: Profile) -> str:
    name = profile.name or profile.profile_id or "(no name)"
    return f"{name} — {profile.address}" if profile.address else name


def render_trigger(subscriptions: list[WebhookSubscription]) -> None:
    st.subheader("Send a test event")
    version, _ = api.scope()
    env = "sandbox" if version == "v1-sandbox" else "live"
    listening = sum(1 for s in subscriptions if s.event == TRIGGER_EVENT and s.env == env)
    st.caption(
        f"Fires **{TRIGGER_EVENT}** for a profile to every **{env}** subscription of this key listening for it "
        f"({listening} now). Pick v1-sandbox in the sidebar to reach the sandbox subscriptions instead."
    )
    which, search = st.columns([1, 2], vertical_alignment="bottom")
    st.session_state.setdefault(COLLECTION, "Builders")
    collection = which.selectbox("Collection", COLLECTIONS, format_func=COLLECTION_LABELS.get, key=COLLECTION)
    narrow = search.text_input("Search profiles by name", key=PROFILE_SEARCH, placeholder="Any name").strip()
    try:
        found: Page[Profile] = api.call(
            "search_profiles",
            search=narrow or None,
            collection=collection,
            per_page=PROFILE_CHOICES,
            sort_by_name="asc",
        )
    except PreconError as error:
        api.show_error(error)
        render_outcome("trigger")
        return
    profiles = {p.profile_id: p for p in found.results if p.profile_id}
    if not profiles:
        st.info("No profile matches: try another collection or name.", icon="🔎")
        render_outcome("trigger")
        return
    picked = st.selectbox(
        "Profile",
        list(profiles),
        index=None,
        format_func=lambda id: profile_label(profiles[id]),
        placeholder="Pick a profile (type to search)",
        key=f"wh_profile_{collection}",
    )
    if found.total > len(profiles):
        st.caption(f"The first {len(profiles):,} of {found.total:,} by name: search to narrow them.")
    st.button(
        "Trigger profile webhook",
        icon="📣",
        type="primary",
        disabled=picked is None,
        on_click=trigger,
        args=(collection, picked, profile_label(profiles[picked]) if picked else "", env),
        key="wh_trigger_button",
    )
    render_outcome("trigger")


def first_log_page() -> None:
    st.session_state[LOG_PAGE] = 1
    link_log_filter(st.session_state.get(LOG_FILTER))


def render_delivery(delivery: WebhookDelivery, subscribed: bool) -> None:
    label = (
        f"{status_badge(delivery.status)} · {delivery.event or '?'} → {inline_code(delivery.targetUrl)} · "
        f"{when(delivery.createdAt)}"
    )
    with st.expander(label):
        st.caption(
            f"Delivery `{delivery.id}` (the `webhook-id` header) · event `{delivery.eventId}` · "
            f"subscription `{delivery.subscription}`" + ("" if subscribed else " (deleted)")
        )
        if delivery.attempts:
            st.dataframe(
                attempts_frame(delivery.attempts),
                placeholder="—",
                hide_index=True,
                width="stretch",
                column_config={
                    "#": st.column_config.NumberColumn("#", format="%d", width="small"),
                    "time": st.column_config.TextColumn("Time"),
                    "outcome": st.column_config.TextColumn("Outcome"),
                    "latency": st.column_config.TextColumn("Latency"),
                    "response": st.column_config.TextColumn("Response (start)", width="large"),
                },
            )
            last = delivery.attempts[-1]
            if last.response:
                st.caption("The receiver's last answer, as text:")
                st.code(last.response, language=None)
        else:
            st.caption("Not attempted yet.")
        if not subscribed:
            st.caption("Its subscription was deleted, so it is not sent again from here.")
            return
        send, again = st.columns(2)
        if delivery.status == "pending":
            send.button(
                "Send now",
                icon="⏩",
                type="primary",
                width="stretch",
                key=f"wh_send_now_{delivery.id}",
                on_click=send_now,
                args=(delivery.id,),
                help="Attempts it at once instead of at its next scheduled retry "
                f"({next_attempt(delivery)}); if that fails, the retries carry on.",
            )
        again.button(
            "Replay",
            icon="🔁",
            width="stretch",
            key=f"wh_replay_{delivery.id}",
            on_click=replay,
            args=(delivery.id,),
            help="Sends this delivery again, at once, to the same URL with the same webhook-id"
            + (" (for a pending one, the same as Send now)." if delivery.status == "pending" else "."),
        )


def render_log_section(subscriptions: dict[str, WebhookSubscription]) -> None:
    """The heading and its pause switch, drawn by the whole page; the log itself is a fragment that reruns on its
    own every few seconds while the switch is on (changing the switch reruns the page, which sets it anew)."""
    heading, switch = st.columns([3, 2], vertical_alignment="bottom")
    heading.subheader("Delivery log")
    st.session_state.setdefault(LOG_LIVE, True)
    live = switch.toggle(
        f"Update by itself every {LOG_REFRESH_S} s",
        key=LOG_LIVE,
        help="Turn off to read the log without it changing; the Refresh button still reads it.",
    )
    log = st.fragment(render_log, run_every=LOG_REFRESH_S if live else None)
    log(subscriptions)


def render_log(subscriptions: dict[str, WebhookSubscription]) -> None:
    st.session_state[LOG_FILTER] = linked_log_filter(st.session_state.get(LOG_FILTER), subscriptions)
    which, page, refresh = st.columns([4, 1, 1], vertical_alignment="bottom")
    chosen = which.selectbox(
        "Subscription",
        ["", *subscriptions],
        format_func=lambda id: subscription_label(subscriptions[id]) if id else "All subscriptions",
        key=LOG_FILTER,
        on_change=first_log_page,
    )
    st.session_state.setdefault(LOG_PAGE, 1)
    number = page.number_input("Page", min_value=1, step=1, key=LOG_PAGE)
    refresh.button("Refresh", icon="🔄", width="stretch", key="wh_refresh")
    render_outcome("log")
    try:
        log: Page[WebhookDelivery] = api.call_uncached(
            "webhook_deliveries", subscription=chosen or None, page=int(number) - 1, per_page=LOG_PAGE_SIZE
        )
    except NotFound:
        st.info("This service keeps no delivery log that can be read here (Precon's own service does).", icon="📭")
        return
    except PreconError as error:
        api.show_error(error)
        return
    except ValidationError:
        st.error("**The delivery log could not be read.** Try again in a moment.", icon="⚠️")
        return
    pages = max(log.pages, 1)
    st.caption(
        f"Page {int(number)} of {pages} · {log.total:,} deliveries, newest first · read {when(datetime.now(UTC))}"
    )
    if not log.results:
        st.info("No deliveries yet." if log.total == 0 else "No deliveries on this page.", icon="📭")
        return
    st.dataframe(
        deliveries_frame(log.results),
        placeholder="—",
        hide_index=True,
        width="stretch",
        column_config={
            "status": st.column_config.TextColumn("Status"),
            "event": st.column_config.TextColumn("Event"),
            "target": st.column_config.TextColumn("Target URL"),
            "attempts": st.column_config.NumberColumn("Attempts", format="%d"),
            "last outcome": st.column_config.TextColumn("Last attempt"),
            "next attempt": st.column_config.TextColumn("Next attempt"),
            "created": st.column_config.TextColumn("Created"),
            "delivery": st.column_config.TextColumn("Delivery (webhook-id)"),
        },
        key="wh_log_table",
    )
    st.caption("Open a delivery for every attempt: a pending one can be sent now, any one replayed.")
    for delivery in log.results:
        render_delivery(delivery, delivery.subscription in subscriptions)


def main() -> None:
    if not auth.may_administer():
        auth.admins_only()
        return
    st.title("Webhooks")
    st.caption(
        "The webhook subscriptions of this API key and what was delivered to them. Every delivery is signed with "
        "its subscription's secret (Standard Webhooks): receivers should verify the signature and deduplicate on "
        "`webhook-id`, since a delivery may arrive more than once."
    )
    subscriptions = load_subscriptions()
    by_id = {s.id: s for s in subscriptions}
    render_subscriptions(subscriptions)
    create_column, delete_column = st.columns(2, gap="large")
    with create_column:
        render_create(api.connection().kind == "embedded")
    with delete_column:
        render_delete(by_id)
    st.divider()
    render_trigger(subscriptions)
    st.divider()
    render_log_section(by_id)


main()
