"""What bench/cluster.py prints at the end of a run, and the targets it checks, from the run's JSON report."""

from __future__ import annotations

from typing import Any

JsonDict = dict[str, Any]


def targets(report: JsonDict) -> list[JsonDict]:
    """Each target of the run, its figure and whether it held."""
    found: list[JsonDict] = []

    def check(label: str, value: Any, held: bool) -> None:
        found.append({"target": label, "value": value, "held": held})

    compared, lagged, fail = report["single_vs_replica"], report["write_lag"], report["failover"]
    ratio = compared["ratio_replica_over_single"]
    check("one replica / single node req/s >= 0.8", ratio, ratio >= 0.8)
    worst = max(run["postgres_cpu_ms_per_read"] for run in report["throughput"])
    check("PostgreSQL CPU ms per read (worst of 1, 2, 3 replicas) < 1", worst, worst < 1.0)
    p99, unseen = lagged["listing"]["p99_ms"], lagged["listing"]["unseen"]
    check("write-to-read lag p99 < 1000 ms, every write seen", p99, p99 is not None and p99 < 1000 and not unseen)
    failed = fail["get_failures"] + fail["post_failures"]
    check("failover: requests failed = 0", failed, failed == 0)
    check("failover: webhook events lost = 0", fail["webhooks"]["lost"], fail["webhooks"]["lost"] == 0)
    check("rate limit held across replicas", report["rate_limit"]["allowed_over_ceiling"], report["rate_limit"]["held"])
    return found


def print_comparison(compared: JsonDict) -> None:
    print(
        f"\nOne replica ({compared['replica']}) against one single node (SQLite), each on its own port, "
        f"{compared['rounds']} interleaved rounds each ({', '.join(compared['order'])}):"
    )
    print(
        f"{'':>8} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'failed':>7} {'svc CPU':>8} "
        f"{'pg CPU':>8}  req/s by round"
    )
    for label, side in (("single", compared["single"]), ("replica", compared["one_replica"])):
        cpu = side["cpu_ms_per_request"]
        print(
            f"{label:>8} {side['requests']:>9} {side['requests_per_s']:>8.1f} {side['p50_ms']:>8.1f} "
            f"{side['p95_ms']:>8.1f} {side['failures']:>7} {cpu['service']:>8.3f} {cpu['postgres']:>8.3f}  "
            + ", ".join(f"{r:.1f}" for r in side["rounds_requests_per_s"])
        )
    print(
        f"  replica/single: {compared['ratio_replica_over_single']} x (by round: "
        f"{', '.join(str(r) for r in compared['ratio_by_round'])}); CPU columns are ms per request"
    )
    for label, side in (("single", compared["single"]), ("replica", compared["one_replica"])):
        print(
            f"  {label}, p50/p95 ms by category: "
            + ", ".join(f"{n} {v['p50']:.0f}/{v['p95']:.0f}" for n, v in side["latency_by_category_ms"].items())
        )
    print(
        f"  first rounds' answers: {compared['answers_compared']} compared, {compared['answers_same_total']} same "
        f"total, {compared['answers_same_ids']} same ids in the same order, {compared['answers_same_id_sets']} same "
        f"set of ids; /healthz single {compared['single']['health']}, replica {compared['one_replica']['health']}"
    )


def print_lag(lagged: JsonDict, what: str) -> None:
    load = (
        f"; the mix meanwhile: {lagged['load_requests_per_s']} req/s, p50/p95 {lagged['load_p50_ms']}/"
        f"{lagged['load_p95_ms']} ms, {lagged['load_failures']} failed, replicas' CPU "
        f"{lagged['replicas_cpu_ms_per_request']} ms per request"
        if lagged["load_requests"]
        else ""
    )
    print(
        f"\nWrite-to-read lag, {what}: {lagged['writes']} writes into PostgreSQL over {lagged['write_seconds']} s "
        f"(commit p50 {lagged['write_commit_ms']['p50']} ms){load}; lag = the first answer showing the write minus "
        "the commit's return:"
    )
    print(f"{'replica':>10} {'seen':>5} {'unseen':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}   /healthz generation")
    rows = [*lagged["per_replica"].items(), ("overall", lagged)]
    for name, figures in rows:
        listing, generation = figures["listing"], figures["generation"]
        print(
            f"{name:>10} {listing['seen']:>5} {listing['unseen']:>7} {_ms(listing['p50_ms'])} "
            f"{_ms(listing['p99_ms'])} {_ms(listing['max_ms'])}   p50 {generation['p50_ms']} p99 "
            f"{generation['p99_ms']} max {generation['max_ms']} ms ({generation['unseen']} not reached)"
        )
    print(
        f"  the pollers' requests took p50 {lagged['poll_request_ms']['p50']} ms, p99 "
        f"{lagged['poll_request_ms']['p99']} ms (the lag is measured at the answer's arrival: an upper bound)"
        + (f"; failed polls {lagged['poll_failures']}" if lagged["poll_failures"] else "")
    )


def _ms(value: float | None) -> str:
    return f"{'-':>8}" if value is None else f"{value:>8.1f}"


def print_report(report: JsonDict) -> None:
    runs, fail, limit = report["throughput"], report["failover"], report["rate_limit"]
    hooks = fail["webhooks"]
    print(
        f"\nPrecon cluster on loopback: {report['listings']:,} listings, {report['cpus']} CPUs, concurrency "
        f"{report['concurrency']}, PostgreSQL + Redis + HAProxy + {report['replicas']} replicas "
        "(precon serve --workers 1); "
        f"code {report['code']}; load average {report['load_average']['start']} at the start, "
        f"{report['load_average']['end']} at the end"
    )
    print(f"{'replicas':>8} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'failed':>7}  served by")
    for run in runs:
        served = ", ".join(f"{name} {count}" for name, count in run["served_by"].items() if count)
        print(
            f"{run['replicas']:>8} {run['requests']:>9} {run['requests_per_s']:>8.1f} {run['p50_ms']:>8.1f} "
            f"{run['p95_ms']:>8.1f} {run['failures']:>7}  {served}"
        )
    for run in runs:
        categories = {k: v for k, v in run["latency_by_category_ms"].items() if k != "all"}
        print(
            f"  {run['replicas']} replica(s), p50/p95 ms by category: "
            + ", ".join(f"{name} {stats['p50']:.0f}/{stats['p95']:.0f}" for name, stats in categories.items())
        )
    print(f"\nCPU ms per request ({report['cpus']} CPUs on the machine):")
    parts = list(runs[0]["cpu_ms_per_request"])
    print(f"{'replicas':>8} " + " ".join(f"{part:>9}" for part in parts) + f" {'CPUs busy':>10}")
    for run in runs:
        shares = " ".join(f"{run['cpu_ms_per_request'][part]:>9.1f}" for part in parts)
        print(f"{run['replicas']:>8} {shares} {run['cpus_busy']:>10.2f}")
    print(
        "PostgreSQL CPU ms per read request (target < 1): "
        + ", ".join(f"{run['replicas']} replica(s) {run['postgres_cpu_ms_per_read']:.3f}" for run in runs)
    )
    print_comparison(report["single_vs_replica"])
    print_lag(report["write_lag_at_rest"], "with nothing else running")
    print_lag(report["write_lag"], "under the mix through HAProxy")
    rows = [
        ("failed requests seen by clients (target 0)", f"{fail['get_failures'] + fail['post_failures']}"),
        ("  queries (GET)", f"{fail['get_failures']} of {fail['get_requests']} {fail['get_failed_statuses'] or ''}"),
        (
            "  webhook triggers (POST)",
            f"{fail['post_failures']} of {fail['post_requests']} {fail['post_failed_statuses'] or ''}",
        ),
        (
            "  triggers resent by the client / replayed",
            f"{fail['post_retried_by_client']} ({fail['post_resends_by_client']} resends) / "
            f"{fail['post_answers_replayed']}",
        ),
        ("HAProxy retries / redispatches", f"{fail['haproxy_retries']} / {fail['haproxy_redispatches']}"),
        (
            f"{fail['killed']} killed at / marked DOWN after",
            f"{fail['killed_at_s']} s / {fail['marked_down_after_s']} s",
        ),
        ("webhook events acknowledged", f"{hooks['events_expected']}"),
        ("webhook events lost (target 0)", f"{hooks['lost']}"),
        ("webhook deliveries sent twice (same webhook-id)", f"{hooks['sent_twice']}"),
        ("deliveries of unacknowledged triggers", f"{hooks['unannounced']}"),
        ("deliveries failing their signature", f"{hooks['bad_signatures']}"),
        ("all acknowledged events delivered within", f"{fail['all_delivered_within_s']} s after the stream"),
        ("shared outbox empty (copies sent) within", f"{fail['outbox_drained_within_s']} s after the stream"),
        ("killed replica restarted, back in rotation after", f"{fail['rejoined_after_restart_s']} s"),
        (
            f"rate limit {limit['rate_per_s']:g}/s burst {limit['burst']} over {limit['seconds']} s",
            f"{limit['allowed']} let through of {limit['requests']} (ceiling {limit['ceiling']}; "
            f"{limit['allowed_over_ceiling']} x) {'held' if limit['held'] else 'NOT held'} across replicas",
        ),
    ]
    print(f"\nFailover ({fail['seconds']} s, mix + webhook stream through HAProxy, one replica killed with SIGKILL):")
    rewarmed = report["warmed_after_writes"]
    print(
        f"  {'replicas warmed again first (after the writes)':<50} "
        + ", ".join(f"{name} {w['passes']} passes in {w['seconds']} s" for name, w in rewarmed.items())
    )
    print(f"  {'queries through HAProxy meanwhile':<50} {fail['get_requests_per_s']} req/s")
    for label, value in rows:
        print(f"  {label:<50} {value}")
    if fail["post_failures"]:
        print(
            "  (a POST the killed replica held gets no answer: HAProxy closes the client's connection as the replica's"
            " closed, and does not send it again, since it may have been done; GETs are sent to another replica)"
        )
    print("\nTargets:")
    for target in report["targets"]:
        print(f"  {'held' if target['held'] else 'MISSED':<7} {target['target']:<62} {target['value']}")
    for note in report["notes"]:
        print(f"note: {note}")
