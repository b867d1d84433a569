"""The Python bindings against a real `stn serve` (plain, with periodic
pushes, and TLS with a self-signed CA), started by the harness
(tests/bindings.rs), which passes the ports and files in the environment."""

import asyncio
import os
import threading
import time

import pytest

from stn_ffi import (
    BodyRequest,
    BodySource,
    Channel,
    ClientConfig,
    ErrorKind,
    IdentifyAnswer,
    IdentifyDecision,
    IdentifyHandler,
    Judge,
    JudgeRequest,
    LinkStatus,
    LinkStatusListener,
    LogLevel,
    LogRecord,
    LogSink,
    NetworkKind,
    Profile,
    Push,
    PushListener,
    Report,
    ReportListener,
    StnClient,
    StnError,
    Task,
    TlsConfig,
    TlsFailure,
    TlsRoots,
    Verdict,
    set_log_sink,
    spki_pins_of_pem,
)


def port(name):
    return int(os.environ[name])


def read(name):
    with open(os.environ[name]) as f:
        return f.read()


def short_task(body, **kw):
    return Task(cgi="/mars/hello2", body=body.encode(), channel=Channel.SHORT, **kw)


def long_task(body, **kw):
    return Task(cmd_id=8, body=body.encode(), channel=Channel.LONG, **kw)


def plain_config(**kw):
    return ClientConfig(
        endpoints=["127.0.0.1"],
        short_link_port=port("STN_PLAIN_SHORT"),
        long_link_ports=[port("STN_PLAIN_LONG")],
        **kw,
    )


def tls_config(tls):
    return ClientConfig(
        endpoints=["127.0.0.1"],
        short_link_port=port("STN_TLS_SHORT"),
        long_link_ports=[port("STN_TLS_LONG")],
        tls=tls,
    )


def eventually(what, cond, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Logs(LogSink):
    def __init__(self):
        self.records = []

    def log(self, record: LogRecord):
        self.records.append(record)

    def has(self, level, text):
        return any(r.level == level and text in r.message for r in list(self.records))


LOGS = Logs()
set_log_sink(LOGS, LogLevel.WARN)


class Collect(PushListener, LinkStatusListener, ReportListener):
    def __init__(self):
        self.pushes, self.statuses, self.reports = [], [], []

    def on_push(self, push: Push):
        self.pushes.append(push)

    def on_link_status(self, status: LinkStatus):
        self.statuses.append(status)

    def on_report(self, report: Report):
        self.reports.append(report)


async def both_links(client, label):
    """100 concurrent calls on each link; every reply echoes its body."""
    sent = [f"{label} {link} {i}" for i in range(100) for link in ("short", "long")]
    calls = [client.send(short_task(b) if " short " in b else long_task(b)) for b in sent]
    replies = await asyncio.gather(*calls)
    assert [r.body.decode() for r in replies] == sent
    assert all(r.attempts >= 1 and r.task_id > 0 for r in replies)


def test_asyncio_both_links_plain_and_tls():
    async def main():
        plain = StnClient(plain_config())
        await both_links(plain, "plain")
        await plain.shutdown()
        ca = read("STN_CA_PEM")
        tls = StnClient(tls_config(TlsConfig(roots=TlsRoots.PEM_CA(pem=ca), spki_pins=spki_pins_of_pem(ca))))
        await both_links(tls, "tls")
        snapshot = await tls.snapshot()
        assert snapshot.tls.handshakes >= 2 and snapshot.tls.failed == 0, snapshot
        await tls.shutdown()

    asyncio.run(main())


def test_asyncio_cancellation_cancels_the_task():
    async def main():
        client = StnClient(plain_config())
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.send(short_task("needs auth", need_authed=True)), 0.3)
        for _ in range(250):
            if (await client.snapshot()).engine_tasks == 0:
                break
            await asyncio.sleep(0.02)
        assert (await client.snapshot()).engine_tasks == 0
        await client.shutdown()

    asyncio.run(main())


def test_blocking():
    client = StnClient(plain_config())
    assert client.send_blocking(short_task("blocking short")).body == b"blocking short"
    reply = client.send_blocking(long_task("blocking long"))
    assert reply.body == b"blocking long" and reply.status is None and reply.cmd_id == 8
    history = client.export_ban_history_blocking()
    assert len(history) > 0
    second = StnClient(plain_config())
    assert second.import_ban_history_blocking(history) >= 1
    with pytest.raises(StnError.Failure) as garbage:
        second.import_ban_history_blocking(b"garbage")
    assert garbage.value.kind == ErrorKind.HISTORY
    second.shutdown_blocking()
    # Blocking calls from many threads at once.
    results = {}

    def call(i):
        results[i] = client.send_blocking(short_task(f"thread {i}")).body

    threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: f"thread {i}".encode() for i in range(20)}
    client.shutdown_blocking()
    assert client.is_shut_down()
    with pytest.raises(StnError.Failure) as late:
        client.send_blocking(short_task("late"))
    assert late.value.kind == ErrorKind.SHUTDOWN


def failure(call):
    with pytest.raises(StnError.Failure) as caught:
        call()
    return caught.value


def test_typed_errors():
    client = StnClient(plain_config())
    not_found = failure(lambda: client.send_blocking(Task(cgi="/nope", body=b"x", channel=Channel.SHORT)))
    assert not_found.kind == ErrorKind.HTTP_STATUS and not_found.http_status == 404, not_found
    assert not_found.mars_code.err_type == 5 and not_found.mars_code.err_code == 404
    client.shutdown_blocking()

    refusing = StnClient(ClientConfig(endpoints=["127.0.0.1"], short_link_port=port("STN_REFUSED_PORT")))
    refused = failure(lambda: refusing.send_blocking(short_task("x", retry_count=0)))
    assert refused.kind == ErrorKind.CONNECT and "refused" in refused.os_error.lower(), refused
    # The stn profile does not retry a refusal into the deadline; Mars's does.
    at_once = failure(lambda: refusing.send_blocking(short_task("x", total_timeout_ms=600)))
    assert at_once.kind == ErrorKind.CONNECT and at_once.attempts == 1, at_once
    refusing.shutdown_blocking()
    mars = StnClient(
        ClientConfig(endpoints=["127.0.0.1"], short_link_port=port("STN_REFUSED_PORT"), profile=Profile.MARS)
    )
    timed_out = failure(lambda: mars.send_blocking(short_task("x", total_timeout_ms=600)))
    assert timed_out.kind == ErrorKind.TIMEOUT and timed_out.last_attempt_kind == ErrorKind.CONNECT, timed_out
    mars.shutdown_blocking()

    wrong_ca = StnClient(tls_config(TlsConfig(roots=TlsRoots.PEM_CA(pem=read("STN_WRONG_CA_PEM")))))
    unknown = failure(lambda: wrong_ca.send_blocking(short_task("x", retry_count=0)))
    assert unknown.kind == ErrorKind.TLS and isinstance(unknown.tls_failure, TlsFailure.UNKNOWN_ISSUER), unknown
    wrong_ca.shutdown_blocking()

    wrong_pin = StnClient(
        tls_config(TlsConfig(roots=TlsRoots.PEM_CA(pem=read("STN_CA_PEM")), spki_pins=["ab" * 32]))
    )
    pinned = failure(lambda: wrong_pin.send_blocking(short_task("x", retry_count=0)))
    assert pinned.kind == ErrorKind.TLS and isinstance(pinned.tls_failure, TlsFailure.PIN_MISMATCH), pinned
    wrong_pin.shutdown_blocking()

    for bad in (
        ClientConfig(endpoints=[], short_link_port=80),
        ClientConfig(endpoints=["127.0.0.1"]),
        ClientConfig(endpoints=["127.0.0.1:80:90"]),
        ClientConfig(endpoints=["127.0.0.1"], short_link_port=80, backup_ips=["not an ip"]),
        ClientConfig(endpoints=["127.0.0.1"], short_link_port=80, tls=TlsConfig(roots=TlsRoots.WEBPKI(), spki_pins=["x"])),
    ):
        assert failure(lambda: StnClient(bad)).kind == ErrorKind.CONFIG


class Identify(IdentifyHandler):
    def __init__(self):
        self.answers = []

    def build(self, endpoint):
        return IdentifyDecision.NOW(cmd_id=9, body=f"py-token-{len(self.answers) + 1}".encode())

    def verdict(self, answer: IdentifyAnswer):
        self.answers.append(answer.body.decode())
        return True


class TagJudge(Judge):
    def judge(self, request: JudgeRequest):
        if request.user_tag == 666:
            raise RuntimeError("judge bug")
        return Verdict.ACCEPT


class PerAttempt(BodySource):
    def body(self, request: BodyRequest):
        return f"attempt {request.attempt} of task {request.task_id}".encode()


class Broken(BodySource, PushListener):
    def __init__(self):
        self.calls = 0

    def body(self, request: BodyRequest):
        raise ValueError("source bug")

    def on_push(self, push: Push):
        self.calls += 1
        raise ValueError("listener bug")


def test_callbacks():
    identify = Identify()
    client = StnClient(plain_config(), judge=TagJudge(), identify=identify)
    seen, broken = Collect(), Broken()
    client.add_link_status_listener(seen)
    client.add_push_listener(seen)
    client.add_push_listener(broken)
    client.add_report_listener(seen)
    client.make_sure_long_link_connected()
    endpoint = f"127.0.0.1:{port('STN_PLAIN_LONG')}"

    def connected():
        last = seen.statuses[-1] if seen.statuses else None
        return isinstance(last, LinkStatus.CONNECTED) and last.endpoint == endpoint

    eventually("connected", connected)
    eventually("identify", lambda: identify.answers == ["stn-identify-ok:py-token-1"])
    assert client.send_blocking(long_task("on the long link")).body == b"on the long link"

    eventually("3 pushes", lambda: len(seen.pushes) >= 3)
    assert all(p.cmd_id == 10001 and p.body.startswith(b"push ") for p in seen.pushes)
    eventually("the throwing listener's 2nd push", lambda: broken.calls >= 2)
    assert LOGS.has(LogLevel.ERROR, "a listener threw")

    client.set_long_link_enabled(False)
    eventually("disabled", lambda: isinstance(seen.statuses[-1], LinkStatus.DISABLED))
    assert failure(lambda: client.send_blocking(long_task("while disabled"))).kind == ErrorKind.LOCAL
    client.set_long_link_enabled(True)
    eventually("connected again", connected)

    judged = failure(lambda: client.send_blocking(short_task("judge me", user_tag=666)))
    assert judged.kind == ErrorKind.DECODE
    assert LOGS.has(LogLevel.ERROR, "the response judge threw")

    built = client.send_blocking(short_task("fixed", body_source=PerAttempt()))
    assert built.body == f"attempt 1 of task {built.task_id}".encode()
    fallback = client.send_blocking(long_task("fixed body", body_source=broken))
    assert fallback.body == b"fixed body"
    assert LOGS.has(LogLevel.ERROR, "the body source threw")

    eventually("reports", lambda: any(r.task_id == built.task_id for r in seen.reports))
    report = next(r for r in seen.reports if r.task_id == built.task_id)
    assert report.channel == Channel.SHORT and report.endpoint == f"127.0.0.1:{port('STN_PLAIN_SHORT')}"
    assert report.bytes_received > 0 and report.error is None

    for control in (
        lambda: client.network_changed(NetworkKind.MOBILE),
        client.network_lost,
        lambda: client.network_available(NetworkKind.WIFI),
        lambda: client.set_foreground(False),
        client.redo_tasks,
        client.make_sure_long_link_connected,
    ):
        control()
    assert client.send_blocking(long_task("after controls")).body == b"after controls"
    client.shutdown_blocking()


def test_auth_clear_and_shutdown():
    async def main():
        client = StnClient(plain_config())
        waiting = asyncio.ensure_future(client.send(short_task("after login", need_authed=True)))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        client.set_host_authed("", None, True)
        assert (await waiting).body == b"after login"
        client.set_authed(False)
        held = asyncio.ensure_future(client.send(short_task("held", need_authed=True)))
        while (await client.snapshot()).engine_tasks != 1:
            await asyncio.sleep(0.02)
        client.clear_tasks()
        with pytest.raises(StnError.Failure) as cleared:
            await held
        assert cleared.value.kind == ErrorKind.CANCELLED
        pending = asyncio.ensure_future(client.send(short_task("pending", need_authed=True)))
        while (await client.snapshot()).engine_tasks != 1:
            await asyncio.sleep(0.02)
        await client.shutdown()
        with pytest.raises(StnError.Failure) as ended:
            await pending
        assert ended.value.kind == ErrorKind.SHUTDOWN
        assert client.is_shut_down()

    asyncio.run(main())
