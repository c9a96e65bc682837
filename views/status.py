"""Status (admins): the listings service's health and version, its requests and latency per operation over the last
hour, the webhook outbox, and each subscription's deliveries, failing first (see components/status.py)."""

from __future__ import annotations

from components import auth, status

if auth.may_administer():
    status.render()
else:
    auth.admins_only()
