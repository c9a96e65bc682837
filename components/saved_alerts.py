"""The "Alert me" of a saved search: filtered webhook subscriptions (``listing.matched`` and ``listing.updated``
with its filters and the fields chosen) on a deployment of ours; which subscriptions serve which saved search; and
whether the deployment takes filtered subscriptions at all (its OpenAPI document says so; the production service's
does not, and the button then says why it is off)."""

from __future__ import annotations

import httpx
import pandas as pd
import streamlit as st

from components import api
from components import saved as sv
from components.formatting import markdown_text
from components.webhook_log import inline_code
from precon import filters
from precon.client.errors import BadRequest, PreconError
from precon.client.models import WebhookSubscription
from precon.dashboard import saved_searches as store_module
from precon.dashboard.saved_searches import ALERT_EVENTS, Alert, SavedSearch, Unavailable

OPENAPI_TIMEOUT_S = 15
"""A deployment builds its OpenAPI document on the first request (0.6 s on a quiet machine, past 5 s on a loaded
one); the answer is then kept ten minutes."""
SANDBOX_VERSION = "v1-sandbox"
SECRETS = "saved_alert_secrets"
FIELD_LABELS = {
    "price": "Prices (the listing's and its floor plans' start price, a unit's price)",
    "status": "Statuses (the listing's selling status, a floor plan's or a unit's status: a unit selling)",
}


@st.cache_data(ttl=600, show_spinner=False)
def _capability(identity: str, url: str) -> tuple[bool, str]:
    try:
        answer = httpx.get(f"{url.rstrip('/')}/openapi.json", timeout=OPENAPI_TIMEOUT_S, follow_redirects=False)
        answer.raise_for_status()
        document = answer.json()
    except (httpx.HTTPError, ValueError) as error:
        return False, (
            "This deployment's OpenAPI document could not be read "
            f"({type(error).__name__}), so the dashboard cannot tell whether it takes filtered subscriptions."
        )
    if not isinstance(document, dict) or not store_module.offers_filtered_subscriptions(document):
        return False, (
            "This deployment does not take filtered webhook subscriptions (its webhooks hear of every listing): "
            "alerts need a deployment of this project's listings service."
        )
    return True, ""


def capability() -> tuple[bool, str]:
    """Whether this deployment takes filtered subscriptions, and if not, why (a sentence)."""
    current = api.connection()
    return _capability(current.identity, current.url)


def _selection(saved: SavedSearch) -> tuple[str | None, str | None]:
    level = sv.unit_level(saved)
    listing = saved.listing_filter(unit_level=level)
    unit = saved.unit_filter(unit_level=level)
    return (filters.to_query(listing) if listing is not None else None), (
        filters.to_query(unit) if unit is not None else None
    )


def _subscribe(saved: SavedSearch, target: str, fields: list[str] | None) -> list[WebhookSubscription]:
    """Both subscriptions, each recorded as it is made (a failure of the second keeps the first, recorded)."""
    filter_query, unit_filter = _selection(saved)
    env = "sandbox" if saved.version == SANDBOX_VERSION else "live"
    client, here = api.connection().fresh_client, sv.deployment()
    made: list[WebhookSubscription] = []
    for event in ALERT_EVENTS:
        created = client.create_webhook(
            target, event, env, filter_query=filter_query, unit_filter=unit_filter, fields=fields,
            version=saved.version, province=saved.province,
        )  # fmt: skip
        sv.store().add_alert(
            saved.id, deployment=here, subscription_id=created.id, event=event, target_url=target, fields=fields
        )
        made.append(created)
    return made


def create_alert(search_id: int) -> None:
    where = f"alert_{search_id}"
    target = (st.session_state.get(f"{where}_url") or "").strip()
    chosen = [name for name in FIELD_LABELS if st.session_state.get(f"{where}_{name}")]
    try:
        fields = store_module.alert_fields(chosen, bool(st.session_state.get(f"{where}_all")))
        if "://" not in target:
            raise store_module.Refused("Enter the whole URL that receives the alerts, starting with https://.")
        made = _subscribe(sv.owned(search_id), target, fields)
    except BadRequest as error:
        unknown = "filterQuery" in error.message and "unknown" in error.message.lower()
        why = "This deployment does not take filtered subscriptions. " if unknown else ""
        sv.say(where, "warning", why + sv.failure_text(error))
        return
    except Exception as error:  # every failure is a message (the file's, the API's, a refused value)
        sv.say(where, "error", sv.failure_text(error))
        return
    st.session_state[SECRETS] = {"search": search_id, "made": [(s.id, s.event, s.secret or "") for s in made]}
    st.session_state[popover_key(search_id)] = False  # closed: open, it covered the secrets shown below it
    sv.say(where, "success", f"Alerts on: {len(made)} subscriptions send to {inline_code(target)}.")


def popover_key(search_id: int) -> str:
    """The key of a saved search's alert popover, which holds whether it is open."""
    return f"alert_{search_id}_popover"


def remove_alerts(search_id: int) -> None:
    """Deletes the subscriptions serving a saved search on this deployment, and their record."""
    here = sv.deployment()
    for alert in [a for a in sv.store().alerts(here) if a.saved_search_id == search_id]:
        try:
            api.connection().fresh_client.delete_webhook(alert.subscription_id)
        except PreconError as error:
            if error.status != 404:  # one already deleted elsewhere is simply forgotten
                raise
        sv.store().forget_alert(here, alert.subscription_id)


def stop_alerts(search_id: int) -> None:
    where = f"alert_{search_id}"
    try:
        sv.owned(search_id)  # its saver's or an admin's to stop
        remove_alerts(search_id)
    except Exception as error:  # every failure is a message
        sv.say(where, "error", sv.failure_text(error))
        return
    sv.say(where, "success", "Alerts off: its subscriptions were deleted.")


def _render_secrets(search_id: int) -> None:
    shown = st.session_state.get(SECRETS)
    if not shown or shown["search"] != search_id:
        return
    st.warning("**Copy these signing secrets now: they will not be shown again.** The receiver needs them to check "
               "each delivery's `webhook-signature` (Standard Webhooks).", icon="🔐")  # fmt: skip
    for subscription_id, event, secret in shown["made"]:
        st.caption(f"{event} · subscription `{subscription_id}`")
        st.code(secret or "(the service sent no secret)", language=None)
    st.button("I have stored the secrets", key=f"alert_secrets_done_{search_id}", on_click=st.session_state.pop,
              args=(SECRETS, None))  # fmt: skip


def alert_control(saved: SavedSearch, alerts: list[Alert]) -> str | None:
    """The "Alert me" popover of one saved search (or, with alerts on, where they go and "Stop alerts"), for a row
    of buttons; what stops alerts from being offered, if anything, for :func:`alert_notes` below the row."""
    where = f"alert_{saved.id}"
    offered, why = capability()
    problem = None if offered else why
    if problem is None and saved.deployment != sv.deployment():
        problem = "It was saved against another deployment: save it again here to get alerts from this one."
    problem = problem or store_module.alert_problem(saved)
    label = f"Alerts on ({len(alerts)})" if alerts else "Alert me"
    with st.popover(label, icon=":material/notifications:", disabled=problem is not None and not alerts,
                    help=problem, key=popover_key(saved.id), on_change="rerun"):  # fmt: skip
        if alerts:
            for alert in alerts:
                fields = ", ".join(alert.fields) if alert.fields else "every field"
                st.caption(f"{alert.event} → {inline_code(alert.target_url)} · {fields} · `{alert.subscription_id}`")
            st.button("Stop alerts", key=f"{where}_stop", on_click=stop_alerts, args=(saved.id,))
        elif problem is None:
            _alert_form(saved, where)
    return problem


def alert_notes(saved: SavedSearch, alerts: list[Alert], problem: str | None) -> None:
    """Below the row of buttons, at full width: why alerts are off, the outcome of the last try, and the one-time
    signing secrets of alerts just made."""
    if problem is not None and not alerts:
        st.caption(f"Alerts off: {problem}")
    sv.show_outcome(f"alert_{saved.id}")
    _render_secrets(saved.id)


def _alert_form(saved: SavedSearch, where: str) -> None:
    st.markdown(
        f"Webhooks for **{markdown_text(saved.name)}**: `listing.matched` when a listing comes to match it, "
        "`listing.updated` when one of its listings changes in what is ticked below."
    )
    with st.form(f"{where}_form", border=False):
        st.text_input("Target URL", key=f"{where}_url", placeholder="https://example.com/hooks")
        for name, text in FIELD_LABELS.items():
            st.checkbox(text, value=True, key=f"{where}_{name}")
        st.checkbox("Any other change too (every field)", key=f"{where}_all")
        st.form_submit_button("Turn alerts on", type="primary", on_click=create_alert, args=(saved.id,))


def with_saved_search_column(frame: pd.DataFrame) -> pd.DataFrame:
    """The Webhooks page's subscriptions table with the saved search each subscription serves, if any."""
    try:
        names = {s.id: s.name for s in sv.store().all()}
        serving = {a.subscription_id: names.get(a.saved_search_id, "") for a in sv.store().alerts(sv.deployment())}
    except Unavailable:
        serving = {}
    return frame.assign(saved_search=[serving.get(str(i), "") for i in frame.get("id", [])])
