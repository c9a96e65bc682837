"""Where webhooks may go: resolution off the event loop under a deadline, IPv4 hidden in IPv6, and URLs that
carry control characters, user names or hosts that are not names."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpcore
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from precon.service.webhooks import targets as webhook_targets
from precon.service.webhooks.targets import (
    MAX_URL_LENGTH,
    RESOLVE_TIMEOUT_S,
    GuardedBackend,
    TargetPolicy,
    TargetRefused,
    embedded_ipv4,
)

STRICT = TargetPolicy()
DEV = TargetPolicy(allow_http=True, allow_loopback=True)
PUBLIC_V4 = "93.184.216.34"
V4 = ipaddress.IPv4Address
V6 = ipaddress.IPv6Address


def refused(policy: TargetPolicy, address: str | V4 | V6) -> bool:
    try:
        policy.check_address(ipaddress.ip_address(address))
    except TargetRefused:
        return True
    return False


# -- 1. resolution off the event loop, under a deadline -----------------------------------------------------


class LoopTicks:
    """The ticks counted by :func:`ticking_while`'s ticker so far, and what each slow look-up saw of them: a loop
    blocked by a look-up cannot tick during it at all, however fast or loaded the machine, so a look-up that saw
    the count move ran off the loop."""

    def __init__(self) -> None:
        self.count = 0
        self.during_lookups: list[int] = []

    def moved_during_every_lookup(self) -> bool:
        return bool(self.during_lookups) and all(moved > 0 for moved in self.during_lookups)


def slow_resolver(
    delay_s: float, answer: str = PUBLIC_V4, ticks: LoopTicks | None = None
) -> tuple[Callable[..., Any], list[str]]:
    """A ``getaddrinfo`` that takes ``delay_s`` to answer ``answer``, and the names of the threads it ran in; with
    ``ticks``, each look-up records how far the loop's ticks moved while it slept."""
    threads: list[str] = []

    real_lookup = socket.getaddrinfo

    def resolve(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not host.endswith(".example.test"):
            # Only the tests' own names are answered: any other look-up in the process meanwhile (a delivery
            # worker's, a client's) resolves as ever, so nothing is ever sent to the made-up public address.
            return real_lookup(host, port, *args, **kwargs)
        threads.append(threading.current_thread().name)
        before = ticks.count if ticks is not None else 0
        time.sleep(delay_s)
        if ticks is not None:
            ticks.during_lookups.append(ticks.count - before)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, int(port)))]

    return resolve, threads


async def ticking_while(work: Callable[[], Any], ticks: LoopTicks | None = None) -> tuple[Any, int]:
    """Runs ``work()`` (a coroutine) while another coroutine counts 10 ms ticks (into ``ticks`` too); the outcome
    and the ticks."""
    clock = ticks if ticks is not None else LoopTicks()
    finished = asyncio.Event()

    async def ticker() -> None:
        while not finished.is_set():
            await asyncio.sleep(0.01)
            clock.count += 1

    task = asyncio.create_task(ticker())
    try:
        outcome: Any = await work()
    except TargetRefused as refusal:
        outcome = refusal
    finished.set()
    await task
    return outcome, clock.count


def run_loop(coroutine: Any) -> Any:
    """``asyncio.run`` in a thread of its own: the browser tests' Playwright keeps a loop running in this one."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as runner:
        return runner.submit(asyncio.run, coroutine).result()


def test_the_deadline_is_three_seconds() -> None:
    assert RESOLVE_TIMEOUT_S == 3.0
    assert STRICT.resolve_timeout_s == RESOLVE_TIMEOUT_S


def test_a_slow_answer_does_not_stall_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = LoopTicks()
    resolver, threads = slow_resolver(2.2, ticks=ticks)
    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", resolver)
    url, _ = run_loop(ticking_while(lambda: STRICT.check_url_async("https://slow.example.test/hooks"), ticks))
    assert url == "https://slow.example.test/hooks"
    assert ticks.moved_during_every_lookup(), ticks.during_lookups
    assert threads and all(name.startswith("webhook-resolve") for name in threads)


def test_an_answer_slower_than_the_deadline_is_refused_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = LoopTicks()
    resolver, _ = slow_resolver(5.0, ticks=ticks)
    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", resolver)
    started = time.monotonic()
    outcome, counted = run_loop(ticking_while(lambda: STRICT.check_url_async("https://slower.example.test/h"), ticks))
    assert isinstance(outcome, TargetRefused)
    assert str(outcome) == "the host 'slower.example.test' did not resolve within 3 s"
    assert time.monotonic() - started < 4.9  # refused at the deadline, not when the answer came
    assert counted > 0  # the loop ticked until the deadline (the look-up itself is still asleep in its thread)
    assert not ticks.during_lookups  # the refusal came first: a look-up blocking the loop would have answered


def test_the_delivery_worker_resolves_under_the_deadline_too(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver, _ = slow_resolver(2.0)
    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", resolver)
    backend = GuardedBackend(TargetPolicy(resolve_timeout_s=0.3))
    started = time.monotonic()
    with pytest.raises(httpcore.ConnectError, match=r"did not resolve within 0\.3 s"):
        backend.connect_tcp("slow.example.test", 443, timeout=10)
    assert time.monotonic() - started < 1.5
    with pytest.raises(TargetRefused, match=r"did not resolve within 0\.3 s"):
        TargetPolicy(resolve_timeout_s=0.3).check_url("https://slow.example.test/h")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(delay=st.sampled_from([0.0, 0.05, 0.1, 0.35, 0.45, 0.6]), concurrent=st.integers(1, 4))
def test_property_each_check_answers_or_times_out_by_its_own_deadline_while_the_loop_runs(
    delay: float, concurrent: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the delay, and however many checks wait at once: an answer before the deadline is used, one
    after it is a refusal naming the deadline, and the loop keeps ticking all the while."""
    ticks = LoopTicks()
    resolver, _ = slow_resolver(delay, ticks=ticks)
    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", resolver)
    policy = TargetPolicy(resolve_timeout_s=0.22)

    async def many() -> list[Any]:
        return await asyncio.gather(
            *(policy.check_url_async(f"https://n{i}.example.test/h") for i in range(concurrent)),
            return_exceptions=True,
        )

    outcomes, _ = run_loop(ticking_while(many, ticks))
    for i, outcome in enumerate(outcomes):
        if delay < 0.22:
            assert outcome == f"https://n{i}.example.test/h"
        else:
            assert isinstance(outcome, TargetRefused) and "did not resolve within 0.22 s" in str(outcome)
    if 0.1 <= delay < 0.22:  # a window of ten ticks at least, the look-ups over before the deadline: the loop ticked
        assert any(moved > 0 for moved in ticks.during_lookups), ticks.during_lookups
    # (past the deadline, the refusals themselves say the loop ran: a loop blocked by the look-up could not refuse)


# -- 2. IPv4 addresses inside IPv6 ones ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:a9fe:a9fe::1", "metadata"),  # 6to4 of 169.254.169.254
        ("2002:0a00:0001::1", "private"),  # 6to4 of 10.0.0.1
        ("::ffff:10.0.0.1", "private"),  # mapped
        ("::ffff:0:a9fe:a9fe", "metadata"),  # translated
        ("::127.0.0.1", "loopback"),  # compatible
        ("::169.254.10.1", "link-local"),
        ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64, well-known prefix
        ("64:ff9b:1:2:3:4:7f00:1", "loopback"),  # NAT64, local use
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, client 127.0.0.1 (obfuscated)
        ("2001:0:a00:1::1", "private"),  # Teredo, server 10.0.0.1
        ("2002:6440:1::1", "private"),  # 6to4 of 100.64.0.1 (carrier NAT)
        ("2002:e000:1::1", "not a public"),  # 6to4 of 224.0.0.1 (multicast)
        ("2002:ffff:ffff::1", "not a public"),  # 6to4 of 255.255.255.255
        ("fec0::1", "private"),  # site-local
        ("fd12:3456::1", "private"),  # unique local
        ("fe80::1", "link-local"),
        ("ff02::1", "not a public"),
        ("::", "not a public"),
        ("::1", "loopback"),
        ("2001:db8::1", "not a public"),
        ("3fff::1", "not a public"),
        ("100::1", "not a public"),
        ("fd00:ec2::254", "metadata"),
    ],
)
def test_ipv6_that_is_not_public_or_hides_an_address_that_is_not_is_refused(address: str, reason: str) -> None:
    with pytest.raises(TargetRefused, match=reason):
        STRICT.check_address(ipaddress.ip_address(address))
    with pytest.raises(TargetRefused, match=reason):
        STRICT.check_url(f"https://[{address}]/hooks")


def test_public_ipv6_and_public_ipv4_in_ipv6_are_accepted() -> None:
    for address in ("2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:1.1.1.1", "2002:101:101::1"):
        STRICT.check_address(ipaddress.ip_address(address))
    assert STRICT.check_url("https://[2606:4700:4700::1111]/h") == "https://[2606:4700:4700::1111]/h"


def test_in_development_loopback_is_allowed_plainly_but_not_wrapped() -> None:
    for address in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        DEV.check_address(ipaddress.ip_address(address))
    for address in ("2002:7f00:1::1", "64:ff9b::7f00:1", "::127.0.0.1"):
        assert refused(DEV, address), address
    assert refused(DEV, "2002:a9fe:a9fe::1")


def test_embedded_ipv4_finds_every_form() -> None:
    def inner(address: str) -> list[str]:
        return [str(a) for a in embedded_ipv4(V6(address))]

    assert inner("::ffff:1.2.3.4") == ["1.2.3.4"]
    assert inner("::ffff:0:1.2.3.4") == ["1.2.3.4"]
    assert inner("::1.2.3.4") == ["1.2.3.4"]
    assert inner("64:ff9b::1.2.3.4") == ["1.2.3.4"]
    assert inner("64:ff9b:1:aaaa:bbbb::1.2.3.4") == ["1.2.3.4"]
    assert inner("2002:102:304:5::6") == ["1.2.3.4"]
    assert inner("2001:0:506:708::fefd:fcfb") == ["5.6.7.8", "1.2.3.4"]  # Teredo: server, then client
    assert inner("2606:4700:4700::1111") == []
    assert inner("::1") == [] and inner("::") == []


BLOCKED_V4 = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "255.255.255.255/32",
    )
]
ipv4s = st.one_of(
    st.ip_addresses(v=4),
    st.sampled_from(BLOCKED_V4).flatmap(lambda network: st.ip_addresses(network=network)),
    st.sampled_from([V4("169.254.169.254"), V4("169.254.170.2"), V4("100.100.100.200")]),
)
bits = st.integers(0, 2**128 - 1)


def wrappings(v4: V4, noise: int, other: V4) -> dict[str, V6]:
    """``v4`` inside IPv6 in every form; ``noise`` fills the bits the form leaves free; ``other`` is the
    Teredo address beside it."""
    n = int(v4)
    return {
        "mapped": V6((0xFFFF << 32) | n),
        "translated": V6((0xFFFF << 48) | n),
        "compatible": V6(n),
        "6to4": V6((0x2002 << 112) | (n << 80) | (noise & (2**80 - 1))),
        "teredo client": V6((0x20010000 << 96) | (int(other) << 64) | ((noise & 0xFFFFFFFF) << 32) | (~n & 0xFFFFFFFF)),
        "teredo server": V6((0x20010000 << 96) | (n << 64) | ((noise & 0xFFFFFFFF) << 32) | (~int(other) & 0xFFFFFFFF)),
        "nat64": V6((0x0064FF9B << 96) | n),
        "nat64 local": V6((0x0064FF9B0001 << 80) | ((noise & (2**48 - 1)) << 32) | n),
    }


@settings(max_examples=400, deadline=None)
@given(v4=ipv4s, noise=bits, other=st.ip_addresses(v=4))
def test_property_every_wrapping_of_a_refused_ipv4_is_refused(v4: V4, noise: int, other: V4) -> None:
    for policy in (STRICT, DEV):
        if not refused(policy, v4):
            continue
        for form, wrapped in wrappings(v4, noise, other).items():
            if form == "compatible" and int(v4) <= 1:
                continue  # :: and ::1 are themselves (unspecified, loopback), not 0.0.0.0 and 0.0.0.1
            assert refused(policy, wrapped), (form, str(wrapped), str(v4))
            assert v4 in embedded_ipv4(wrapped), (form, str(wrapped))


@settings(max_examples=400, deadline=None)
@given(v4=st.ip_addresses(v=4), noise=bits)
def test_property_wrappings_of_public_ipv4_do_not_depend_on_which_public_address(v4: V4, noise: int) -> None:
    """A public IPv4 address wrapped is judged by the wrapper alone: the same as 8.8.8.8 wrapped alike."""
    assume(not refused(STRICT, v4))
    reference = wrappings(V4("8.8.8.8"), noise, V4("8.8.4.4"))
    for form, wrapped in wrappings(v4, noise, V4("8.8.4.4")).items():
        assert refused(STRICT, wrapped) == refused(STRICT, reference[form]), (form, str(wrapped))
    assert not refused(STRICT, wrappings(v4, noise, v4)["mapped"])


@settings(max_examples=300, deadline=None)
@given(address=st.ip_addresses(v=6))
def test_property_an_accepted_ipv6_is_global_and_hides_only_accepted_ipv4(address: V6) -> None:
    if refused(STRICT, address):
        return
    assert address.is_global or address.ipv4_mapped is not None
    for inner in embedded_ipv4(address):
        assert not refused(STRICT, inner), (str(address), str(inner))
    assert not (address.is_site_local or address.is_link_local or address.is_multicast or address.is_loopback)


# -- 3. what a target URL may hold --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("https://1.1.1.1/h\r\nX-Injected: 1", "U+000D"),
        ("https://1.1.1.1/h\nx", "U+000A"),
        ("https://1.1.1.1/h\x00", "U+0000"),
        ("https://1.1.1.1/\th", "U+0009"),
        ("https://1.1.1.1/a b", "U+0020"),
        (" https://1.1.1.1/h", "U+0020"),
        ("https://1.1.1.1/h\x7f", "U+007F"),
        ("https://1.1.1.1/h\u0085", "U+0085"),
        ("https://1.1.1.1/h\u00a0", "U+00A0"),
        ("https://1.1.1.1/h\u2028", "U+2028"),
        ("https://1.1.1.1/h\u202e", "U+202E"),
        ("https://exa\u200bmple.com/h", "U+200B"),
        ("https://1.1.1.1/h\ufeff", "U+FEFF"),
    ],
)
def test_control_characters_and_spaces_are_refused_by_name(url: str, fragment: str) -> None:
    with pytest.raises(TargetRefused, match="may not contain spaces or control characters") as refusal:
        STRICT.check_url(url)
    assert fragment in str(refusal.value)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("https://user:pw@1.1.1.1/h", "user name"),
        ("https://user@1.1.1.1/h", "user name"),
        ("https://@1.1.1.1/h", "user name"),
        ("https://1.1.1.1/" + "a" * MAX_URL_LENGTH, "longer than 2048"),
        ("https://a..b.com/h", "not a valid"),
        ("https://" + "ü" * 70 + ".com/h", "not a valid internationalised"),
        ("https://exa%00mple.com/h", "not a valid host"),
        ("https://1.1.1.1/café", "ASCII"),
        ("https:///h", "no host"),
    ],
)
def test_user_names_long_urls_and_bad_hosts_are_refused(url: str, fragment: str) -> None:
    with pytest.raises(TargetRefused, match=fragment):
        STRICT.parse_url(url)


def test_an_internationalised_host_is_stored_as_dns_sends_it() -> None:
    target = STRICT.parse_url("https://bücher.example:8443/hooks?a=1")
    assert target.url == "https://xn--bcher-kva.example:8443/hooks?a=1"
    assert (target.host, target.port) == ("xn--bcher-kva.example", 8443)
    assert STRICT.parse_url("https://hooks.example.com/a").url == "https://hooks.example.com/a"


BAD_CHARACTERS = [chr(c) for c in range(0x20)] + [
    " ",
    "\x7f",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2000",
    "\u200b",
    "\u200e",
    "\u2028",
    "\u2029",
    "\u202e",
    "\u3000",
    "\ufeff",
]
SAFE_PATH = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/%", max_size=60
)


@settings(max_examples=400, deadline=None)
@given(path=SAFE_PATH, bad=st.sampled_from(BAD_CHARACTERS), where=st.floats(0, 1))
def test_property_a_bad_character_anywhere_refuses_the_url(path: str, bad: str, where: float) -> None:
    url = "https://1.1.1.1/" + path
    position = int(where * len(url))
    poisoned = url[:position] + bad + url[position:]
    with pytest.raises(TargetRefused, match="spaces or control characters"):
        STRICT.parse_url(poisoned)
    with pytest.raises(TargetRefused, match="spaces or control characters"):
        DEV.parse_url(poisoned.replace("https:", "http:", 1))


@settings(max_examples=300, deadline=None)
@given(path=SAFE_PATH, query=SAFE_PATH, port=st.one_of(st.none(), st.integers(1, 65535)))
def test_property_clean_urls_are_kept_as_they_are(path: str, query: str, port: int | None) -> None:
    netloc = "hooks.example.com" + ("" if port is None else f":{port}")
    url = f"https://{netloc}/{path}?{query}"
    assume(len(url) <= MAX_URL_LENGTH)
    target = STRICT.parse_url(url)
    assert target.url == url
    assert target.host == "hooks.example.com"
    assert target.port == (443 if port is None else port)


@settings(max_examples=200, deadline=None)
@given(user=st.text(alphabet="abc:%", max_size=8), path=SAFE_PATH)
def test_property_any_user_information_is_refused(user: str, path: str) -> None:
    with pytest.raises(TargetRefused, match="user name or password"):
        STRICT.parse_url(f"https://{user}@hooks.example.com/{path}")
