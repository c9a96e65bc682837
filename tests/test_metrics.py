"""``/metrics`` and the request log (issue 25): ``precon serve --workers 2`` counts every request, refusal, index
build and webhook attempt once across its worker processes, whichever of them is asked; label sets stay bounded
whatever ids and keys clients send; the token and port settings; one JSON line a request with its ``x-request-id``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from precon.service.api.observe import StoreCollector, metrics_policy, render
from precon.service.app import create_app
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings
from precon.service.logs import JsonFormatter, TextFormatter
from precon.service.server import ServerThread
from precon.service.webhooks.model import Event
from precon.service.webhooks.sqlite import WebhookStore
from tests.cli_support import PRECON, clean_env, run_precon
from tests.conftest import Api
from tests.ports import free_port
from tests.test_service_workers import Served, serve
from tests.webhook_support import Receiver

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def scrape(url: str, **headers: str) -> Samples:
    answer = httpx.get(url + "/metrics", headers={"connection": "close", **headers}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return samples(answer.text)


def access_lines(log: Path) -> list[dict[str, Any]]:
    lines = [orjson.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("logger") == "precon.access"]


# -- two worker processes --------------------------------------------------------------------------------------


class Traffic:
    """Requests sent to the service, tallied as the client saw them."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.http = httpx.Client(timeout=30)
        self.sent: Counter[tuple[str, str, int]] = Counter()
        """(operation, version, status) → requests."""
        self.bytes: Counter[str] = Counter()
        self.ids: dict[str, tuple[str, int]] = {}
        """x-request-id → (operation, status)."""

    def send(self, method: str, operation: str, key: str | None, version: str = "v1", **kwargs: Any) -> httpx.Response:
        headers = {"connection": "close", **({"x-api-key": key} if key is not None else {})}
        url = f"{self.served.url}/{version}/all/{operation}"
        answer = self.http.request(method, url, headers=headers, **kwargs)
        self.sent[(operation, version, answer.status_code)] += 1
        self.bytes[operation] += len(answer.content)
        self.ids[answer.headers["x-request-id"]] = (operation, answer.status_code)
        return answer


def _drive(traffic: Traffic, other_key: str) -> int:
    """Known requests: answers, 4xx, a bad key, a key over its rate. Answers how many were refused with 429."""
    product = {"product_id": DEV_PRODUCT_ID}
    for page in range(6):
        assert traffic.send("GET", "search_listings", DEV_API_KEY, params={**product, "page": page}).is_success
    listing = traffic.send("GET", "search_listings", DEV_API_KEY, params={"perPage": 1}).json()["results"][0]
    for _ in range(3):
        assert traffic.send("GET", "listing", DEV_API_KEY, params={"id": listing["listingId"]}).is_success
    for _ in range(2):
        assert traffic.send("GET", "listing", DEV_API_KEY, params={"id": "NO-SUCH"}).status_code == 404
        assert traffic.send("GET", "search_listings", DEV_API_KEY, params={"perPage": "many"}).status_code == 400
    for _ in range(3):
        assert traffic.send("GET", "facet_counts", DEV_API_KEY, params={"facets": "type"}).is_success
    assert traffic.send("GET", "search_listings", DEV_API_KEY, version="v1-lite").is_success
    assert traffic.send("GET", "search_listings", DEV_API_KEY, version="v7").status_code == 400
    for number in range(5):
        assert traffic.send("GET", "search_listings", f"garbage-{number}").status_code == 403
    assert traffic.send("GET", "search_listings", None).status_code == 403
    refused = 0
    for _ in range(45):  # the second key's burst is 30: the rest are refused
        refused += traffic.send("GET", "search_listings", other_key, params={"perPage": 0}).status_code == 429
    assert refused > 0
    return refused


def _webhooks(traffic: Traffic, good: Receiver, bad: Receiver) -> dict[str, str]:
    """A subscription to a receiver that answers 204 and one to a receiver that answers 500; three events."""
    subscriptions = {}
    for name, receiver in (("good", good), ("bad", bad)):
        body = {"env": "live", "targetUrl": receiver.url, "event": "profile.updated"}
        created = traffic.send("POST", "webhooks", DEV_API_KEY, json=body)
        assert created.is_success, created.text
        subscriptions[name] = created.json()["id"]
    profile = traffic.send("GET", "search_profiles", DEV_API_KEY, params={"perPage": 1}).json()["results"][0]
    for _ in range(3):
        trigger = {"id": profile["objectID"], "collection": profile["path"].split("/")[0]}
        assert traffic.send("POST", "trigger_profile_webhook", DEV_API_KEY, json=trigger).is_success
    return subscriptions


def _settled(served: Served, check: Any, timeout: float = 60) -> Samples:
    deadline = time.monotonic() + timeout
    while True:
        found = scrape(served.url)
        if check(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def _import_one(served: Served, tmp_path: Path) -> None:
    params = {"perPage": 1, "retrieveAttributes": "*"}
    answer = httpx.get(served.url + "/v1/all/search_listings", params=params, headers={"x-api-key": DEV_API_KEY})
    record = answer.json()["results"][0]
    record = {k: v for k, v in record.items() if not k.startswith("_") and k != "objectID"}
    record |= {"listingId": "METRICS1", "path": "Listings/METRICS1", "floorPlans": None}  # plan ids are unique
    (tmp_path / "one.json").write_bytes(orjson.dumps([record]))
    command = [str(PRECON), "catalogue", "import", str(tmp_path / "one.json"), "--data", str(served.data)]
    done = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[Served]:
    env = {"PRECON_SERVICE_RATE_BURST": "30", "PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE": "[0.2, 0.2]"}
    with serve(tmp_path, "--rate-limit", "1", **env) as served:
        yield served


def test_two_workers_count_every_request_once_and_any_answers_for_all(two_workers: Served, tmp_path: Path) -> None:
    served = two_workers
    other_key = run_precon("keys", "create", "--product", "second", "--data", served.data).stdout.strip()
    before = scrape(served.url)
    traffic = Traffic(served)
    good, bad = Receiver().start(), Receiver(status=500).start()
    try:
        refused = _drive(traffic, other_key)
        subscriptions = _webhooks(traffic, good, bad)
        spent = {"outcome": "failed", "attempt": "3"}
        found = _settled(served, lambda s: value(s, "precon_webhook_attempts_total", **spent) >= 3)
    finally:
        good.stop()
        bad.stop()
    traffic.http.close()

    # Every worker wrote its own values (files of both pids), and any worker's /metrics adds them all up.
    pids = {path.stem.rsplit("_", 1)[1] for path in (served.data / "metrics").glob("counter_*.db")}
    assert {str(pid) for pid in served.workers()} <= pids
    for (operation, version, status), count in traffic.sent.items():
        labels = {"operation": operation, "version": "other" if version == "v7" else version, "status": str(status)}
        method = "POST" if operation in ("webhooks", "trigger_profile_webhook") else "GET"
        assert value(found, "precon_requests_total", method=method, **labels) == count, (labels, count)
    for operation in {operation for operation, _, _ in traffic.sent}:
        sent = sum(count for (op, _, _), count in traffic.sent.items() if op == operation)
        assert value(found, "precon_request_duration_seconds_count", operation=operation) == sent
        assert value(found, "precon_response_size_bytes_count", operation=operation) == sent
        assert value(found, "precon_response_size_bytes_sum", operation=operation) == traffic.bytes[operation]
    assert value(found, "precon_rate_limited_total", limit="key") == refused
    assert value(found, "precon_auth_failures_total") == 6  # five garbage keys and one request without a key
    assert not value(before, "precon_requests_total", **_search_200())
    assert not any(name == "precon_requests_total" and ("operation", "metrics") in labels for name, labels in found)

    # Webhook attempts: the good receiver's three deliveries at the first attempt, the bad one's three after three.
    attempts = {
        (outcome, attempt): value(found, "precon_webhook_attempts_total", outcome=outcome, attempt=attempt)
        for outcome in ("delivered", "retrying", "failed")
        for attempt in ("1", "2", "3", "4", "5+")
    }
    assert {k: v for k, v in attempts.items() if v} == {
        ("delivered", "1"): 3,
        ("retrying", "1"): 3,
        ("retrying", "2"): 3,
        ("failed", "3"): 3,
    }
    assert value(found, "precon_webhook_attempt_duration_seconds_count") == 12
    failures = "precon_webhook_subscription_failed_attempts_total"
    assert value(found, failures, subscription=subscriptions["bad"]) == 9
    assert value(found, failures, subscription=subscriptions["good"]) == 0
    assert value(found, "precon_webhook_outbox_pending") == 0
    assert value(found, "precon_webhook_outbox_oldest_pending_age_seconds") == 0
    assert value(found, "precon_webhook_outbox_overdue_seconds") == 0
    assert len(good.received) == 3 and len(bad.received) == 9

    # The catalogue's gauges, and the index after an import.
    listings = value(found, "precon_catalogue_listings", catalogue="live")
    entries = value(found, "precon_catalogue_history_entries", catalogue="live")
    assert listings == 150 and entries >= 150
    assert value(found, "precon_index_builds_total", catalogue="catalogue") == 0
    _import_one(served, tmp_path)
    for _ in range(6):
        assert served.search(httpx.Client(timeout=30), filterQuery="listingId:METRICS1").json()["total"] == 1
    after = scrape(served.url)
    assert value(after, "precon_catalogue_listings", catalogue="live") == 151
    assert value(after, "precon_catalogue_history_entries", catalogue="live") == entries + 1
    # The listing imported is patched into the index the workers held (one worker patches it, the other maps it).
    assert value(after, "precon_index_builds_total", catalogue="catalogue") == 0
    assert value(after, "precon_index_patches_total", catalogue="catalogue") == 1
    assert value(after, "precon_index_patch_duration_seconds_count", catalogue="catalogue") == 1
    assert value(after, "precon_catalogue_last_change_timestamp_seconds", catalogue="live") > 0
    # Every worker answers the same totals (each scrape a new connection, which either worker may take).
    totals = {value(scrape(served.url), "precon_requests_total", **_search_200()) for _ in range(6)}
    assert len(totals) == 1

    _the_log_has_a_line_per_request(served.log, traffic, subscriptions, other_key)


def _search_200() -> dict[str, str]:
    return {"method": "GET", "operation": "search_listings", "status": "200", "version": "v1"}


def _the_log_has_a_line_per_request(log: Path, traffic: Traffic, subscriptions: dict[str, str], other_key: str) -> None:
    lines = access_lines(log)
    by_id = {line["requestId"]: line for line in lines}
    for request_id, (operation, status) in traffic.ids.items():
        line = by_id[request_id]
        assert (line["operation"], line["status"]) == (operation, status)
        assert line["latencyMs"] >= 0 and line["bytes"] >= 0
    keyed = [by_id[i] for i, (op, status) in traffic.ids.items() if status == 200 and op == "facet_counts"]
    assert keyed and all(isinstance(line["keyId"], int) for line in keyed)  # the key's id, never the key
    text = log.read_text()
    assert other_key not in text and "garbage-" not in text
    assert not any(DEV_API_KEY in orjson.dumps(line).decode() for line in lines)
    attempts = [
        orjson.loads(line) for line in text.splitlines() if line.startswith("{") and '"webhook attempt"' in line
    ]
    assert len(attempts) == 12
    assert {a["subscriptionId"] for a in attempts} == set(subscriptions.values())
    assert {a["event"] for a in attempts} == {"profile.updated"}
    assert Counter((a["outcome"], a["attempt"], a["statusCode"]) for a in attempts) == {
        ("delivered", 1, 204): 3,
        ("pending", 1, 500): 3,
        ("pending", 2, 500): 3,
        ("failed", 3, 500): 3,
    }


# -- bounded labels ----------------------------------------------------------------------------------------------


def test_label_sets_stay_bounded_under_ten_thousand_distinct_ids_and_keys(api: Api) -> None:
    def series() -> set[tuple[str, frozenset[tuple[str, str]]]]:
        return {key for key in scrape(api.url) if key[0].startswith("precon_")}

    def three(number: int) -> list[str]:
        """A listing id no one has, a garbage key, a path no route answers: each new."""
        listing_id, garbage, path = (f"{kind}{uuid.uuid4().hex}" for kind in "LKP")
        assert api.get("/v1/all/listing", id=listing_id).status_code == 404
        assert api.get("/v1/all/search_listings", key=garbage).status_code in (403, 429)
        assert api.get(f"/v1/all/{path}-{number}").status_code == 404
        return [listing_id, garbage, path]

    for number in range(40):  # every label value these can reach, the guessing limit's 429 included
        three(number)
    before = series()
    sent = [value for number in range(3_334) for value in three(number)]
    after = series()
    assert len(sent) >= 10_000
    assert after == before, sorted(after ^ before)
    labels = {value for _, label_set in after for _, value in label_set}
    assert not labels & set(sent)


def test_pages_outside_the_api_are_named_by_their_path_and_unknown_paths_are_other(api: Api) -> None:
    def answered(operation: str, status: str) -> float:
        wanted = frozenset({("method", "GET"), ("operation", operation), ("status", status), ("version", "none")})
        return scrape(api.url).get(("precon_requests_total", wanted), 0.0)

    paths = {"/openapi.json": ("openapi.json", "200"), "/docs": ("docs", "200"), "/healthz": ("healthz", "200")}
    paths |= {"/docs/no-such-page": ("other", "404"), f"/{uuid.uuid4().hex}.json": ("other", "404")}
    before = {path: answered(*labels) for path, labels in paths.items()}
    for path, (_, status) in paths.items():
        assert str(httpx.get(api.url + path).status_code) == status, path
    for path, labels in paths.items():
        counted = answered(*labels) - before[path]
        assert counted == (2 if labels[0] == "other" else 1), (path, counted)


# -- who may read /metrics ----------------------------------------------------------------------------------------


def test_where_metrics_are_served() -> None:
    def policy(**settings: Any) -> tuple[bool, int | None, str | None]:
        chosen = metrics_policy(ServiceSettings(**settings))
        return chosen.on_api_port, chosen.port, chosen.token

    assert policy() == (True, None, None)  # loopback: on by default
    assert policy(host="::1") == (True, None, None)
    assert policy(host="0.0.0.0") == (False, None, None)  # beyond loopback: off unless guarded
    assert policy(host="10.0.0.5", metrics_token="t") == (True, None, "t")
    assert policy(host="0.0.0.0", metrics_port=9100) == (False, 9100, None)
    assert policy(host="0.0.0.0", metrics_port=9100, metrics_token="t") == (False, 9100, "t")
    assert policy(metrics=False, metrics_token="t") == (False, None, None)
    with pytest.raises(ValueError, match="beyond loopback"):
        metrics_policy(ServiceSettings(host="0.0.0.0", metrics=True))
    refused = run_precon("serve", "--host", "0.0.0.0", "--port", "0", PRECON_SERVICE_METRICS="true")
    assert refused.returncode == 2 and "PRECON_SERVICE_METRICS_TOKEN" in refused.stderr


def test_a_token_guards_metrics_and_keys_are_not_asked(api: Api) -> None:
    settings = ServiceSettings(data_dir=api.directory.settings.data_dir, metrics_token="s3cret", rate_limit=1)
    directory = api.directory
    app = create_app(settings, live=directory.live, sandbox=directory.sandbox, accounts=directory.accounts)
    with ServerThread(app) as server:
        assert httpx.get(server.url + "/metrics").status_code == 401
        assert httpx.get(server.url + "/metrics", headers={"authorization": "Bearer wrong"}).status_code == 401
        for _ in range(40):  # no API key, and past the limits of keys (1/s) and of requests without one (30 at once)
            scrape(server.url, authorization="Bearer s3cret")
        found = scrape(server.url, authorization="Bearer s3cret")
    assert not any(("operation", "metrics") in labels for _, labels in found)


def test_a_port_of_its_own_serves_both_workers_behind_the_token(tmp_path: Path) -> None:
    port = free_port()
    env = {"PRECON_SERVICE_METRICS_PORT": str(port), "PRECON_SERVICE_METRICS_TOKEN": "s3cret"}
    with serve(tmp_path, **env) as served, httpx.Client(timeout=30) as http:
        for _ in range(8):
            assert served.search(http, perPage=0).status_code == 200
        assert http.get(served.url + "/metrics").status_code == 404  # not on the API's port
        metrics_url = f"http://127.0.0.1:{port}"
        assert http.get(metrics_url + "/metrics", headers={"connection": "close"}).status_code == 401
        counts = {
            value(scrape(metrics_url, authorization="Bearer s3cret"), "precon_requests_total", **_search_200())
            for _ in range(6)
        }
    assert counts == {8.0}


def test_one_worker_counts_in_its_memory(tmp_path: Path) -> None:
    """``--workers 1`` keeps its values in memory, whatever ``PROMETHEUS_MULTIPROC_DIR`` the shell had."""
    with serve(tmp_path, workers=1, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "no-such-directory")) as served:
        with httpx.Client(timeout=30) as http:
            ids = [served.search(http, perPage=0).headers["x-request-id"] for _ in range(3)]
        found = scrape(served.url)
    assert value(found, "precon_requests_total", **_search_200()) == 3
    assert value(found, "process_cpu_seconds_total") > 0
    assert {line["requestId"] for line in access_lines(served.log)} >= set(ids)


# -- the formats ------------------------------------------------------------------------------------------------


def test_log_lines_as_json_or_text() -> None:
    record = logging.LogRecord("precon.access", logging.INFO, __file__, 1, "request", None, None)
    record.fields = {"requestId": "abc", "status": 200}
    line = orjson.loads(JsonFormatter().format(record))
    assert line["requestId"] == "abc" and line["status"] == 200 and line["logger"] == "precon.access"
    assert line["level"] == "info" and line["time"].endswith("Z")
    assert TextFormatter().format(record).endswith("request requestId=abc status=200")


# -- the outbox's gauges, the names the docs and alerts use ---------------------------------------------------------


def test_the_outbox_gauges_read_what_waits(tmp_path: Path) -> None:
    outbox = WebhookStore(tmp_path / "webhooks.sqlite3")
    try:
        empty = samples(render(StoreCollector({}, outbox)).decode())
        assert value(empty, "precon_webhook_outbox_pending") == 0
        assert value(empty, "precon_webhook_outbox_oldest_pending_age_seconds") == 0
        subscription = outbox.subscribe(1, "live", "profile.updated", "https://example.com/hooks")
        outbox.publish([Event("profile.updated", "live", {"id": "x"}, [subscription])] * 3)
        time.sleep(0.2)
        found = samples(render(StoreCollector({}, outbox)).decode())
    finally:
        outbox.close()
    assert value(found, "precon_webhook_outbox_pending") == 3
    assert 0.2 <= value(found, "precon_webhook_outbox_oldest_pending_age_seconds") < 60
    assert 0.2 <= value(found, "precon_webhook_outbox_overdue_seconds") < 60  # due at once, and no sender


def exported_names(text: str) -> set[str]:
    """Every sample name the families of ``/metrics`` can show, whether or not a sample has been recorded yet."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {
        family.name + suffix
        for family in text_string_to_metric_families(text)
        if family.name.startswith("precon_")
        for suffix in suffixes.get(family.type, ("",))
    }


def test_the_docs_and_the_alerts_name_only_metrics_the_service_exports(api: Api) -> None:
    exported = exported_names(httpx.get(api.url + "/metrics").text)
    assert len(exported) > 20
    root = Path(__file__).resolve().parents[1]
    documented = (root / "docs" / "operations.md").read_text()
    for name in exported:
        base = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        assert f"`{base}`" in documented or f"`{name}`" in documented, name
    rules = yaml.safe_load((root / "deploy" / "precon-alerts.yml").read_text())
    expressions = " ".join(str(rule["expr"]) for group in rules["groups"] for rule in group["rules"])
    deploy_doc = (root / "docs" / "deploy.md").read_text().split("## Metrics and alerts")[1].split("\n## ")[0]
    for name in set(re.findall(r"precon_[a-z_]+", expressions + deploy_doc)):
        assert name in exported, name


def test_promtool_accepts_the_sample_configuration(tmp_path: Path) -> None:
    if shutil.which("promtool") is None:
        message = "promtool is not installed: apt-get install -y prometheus"
        if os.environ.get("PRECON_REQUIRE_SYSTEM_TESTS"):
            pytest.fail(message)
        pytest.skip(message)
    deploy = Path(__file__).resolve().parents[1] / "deploy"
    (tmp_path / "token").write_text("s3cret")
    config = (deploy / "prometheus.yml").read_text().replace("/etc/prometheus/precon-metrics.token", "token")
    assert "token" in config
    (tmp_path / "prometheus.yml").write_text(config)
    shutil.copy(deploy / "precon-alerts.yml", tmp_path)
    checked = subprocess.run(["promtool", "check", "config", "prometheus.yml"], capture_output=True, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert b"8 rules found" in checked.stdout
