// The Kotlin bindings on the JVM against a real `stn serve` (plain, with
// periodic pushes, and TLS with a self-signed CA), started by the harness
// (tests/bindings.rs), which passes the ports and files in the environment.
// Every check throws on failure; the last line counts the checks.
package stn.test

import java.io.File
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import stn.*

var checks = 0

fun expect(ok: Boolean, what: () -> String) {
    checks++
    if (!ok) throw AssertionError(what())
}

fun env(name: String): String = System.getenv(name) ?: throw IllegalStateException("$name not set (run through tests/bindings.rs)")

fun port(name: String): UShort = env(name).toInt().toUShort()

/** Polls `cond` every 20 ms for up to `ms`. */
suspend fun eventually(ms: Long, what: String, cond: suspend () -> Boolean) {
    val until = System.nanoTime() + ms * 1_000_000
    while (!cond()) {
        if (System.nanoTime() > until) throw AssertionError("timed out waiting for $what")
        delay(20)
    }
    checks++
}

/** The failure a call throws. */
suspend fun failure(call: suspend () -> Unit): StnException.Failure {
    try {
        call()
    } catch (e: StnException.Failure) {
        return e
    }
    throw AssertionError("expected an StnException")
}

class Logs : LogSink {
    val lines = ConcurrentLinkedQueue<LogRecord>()
    override fun log(record: LogRecord) { lines.add(record) }
    fun has(level: LogLevel, text: String) = lines.any { it.level == level && it.message.contains(text) }
}

class Statuses : LinkStatusListener {
    val seen = CopyOnWriteArrayList<LinkStatus>()
    override fun onLinkStatus(status: LinkStatus) { seen.add(status) }
}

class Pushes : PushListener {
    val seen = CopyOnWriteArrayList<Push>()
    override fun onPush(push: Push) { seen.add(push) }
}

/** Throws on every push: the guard logs it and keeps delivering. */
class ThrowingPushes : PushListener {
    val calls = AtomicInteger()
    override fun onPush(push: Push) {
        calls.incrementAndGet()
        throw IllegalStateException("listener bug")
    }
}

class Reports : ReportListener {
    val seen = CopyOnWriteArrayList<Report>()
    override fun onReport(report: Report) { seen.add(report) }
}

/** Identifies with a token per connection; rejects the first answer. */
class Identify : IdentifyHandler {
    val built = AtomicInteger()
    val answers = CopyOnWriteArrayList<String>()
    override fun build(endpoint: String?): IdentifyDecision {
        val n = built.incrementAndGet()
        return IdentifyDecision.Now(cmdId = 9u, body = "kt-token-$n".toByteArray())
    }
    override fun verdict(answer: IdentifyAnswer): Boolean {
        answers.add(String(answer.body))
        return answers.size > 1
    }
}

/** Accepts every response but those of tasks tagged 666, on which it throws. */
class TagJudge : Judge {
    val judged = AtomicInteger()
    override fun judge(request: JudgeRequest): Verdict {
        judged.incrementAndGet()
        if (request.userTag == 666UL) throw IllegalStateException("judge bug")
        return Verdict.ACCEPT
    }
}

fun shortTask(body: String) = Task(cgi = "/mars/hello2", body = body.toByteArray(), channel = Channel.SHORT)
fun longTask(body: String) = Task(cmdId = 8u, body = body.toByteArray(), channel = Channel.LONG)

/** 100 concurrent calls on each link; every reply is its own body echoed. */
suspend fun bothLinks(client: StnClient, label: String) = coroutineScope {
    val calls = (0 until 100).flatMap { i ->
        listOf(
            async { "$label short $i" to client.send(shortTask("$label short $i")) },
            async { "$label long $i" to client.send(longTask("$label long $i")) },
        )
    }
    for ((sent, reply) in calls.awaitAll()) {
        expect(String(reply.body) == sent) { "reply ${String(reply.body)} to $sent" }
    }
    val shortReply = client.send(shortTask("$label status"))
    expect(shortReply.status == 200.toUShort() && shortReply.taskId > 0u && shortReply.attempts == 1u) { "short reply $shortReply" }
    val longReply = client.send(longTask("$label status"))
    expect(longReply.status == null && longReply.cmdId == 8u) { "long reply $longReply" }
}

fun main() = runBlocking {
    val logs = Logs()
    setLogSink(logs, LogLevel.WARN)
    val plainShort = port("STN_PLAIN_SHORT")
    val plainLong = port("STN_PLAIN_LONG")
    val caPem = File(env("STN_CA_PEM")).readText()
    val wrongCaPem = File(env("STN_WRONG_CA_PEM")).readText()

    // Bad configuration: typed errors that name the problem.
    val noEndpoint = failure { StnClient(ClientConfig(endpoints = listOf(), shortLinkPort = plainShort)) }
    expect(noEndpoint.kind == ErrorKind.CONFIG && noEndpoint.detail.contains("no endpoints")) { noEndpoint.detail }
    val badEndpoint = failure { StnClient(ClientConfig(endpoints = listOf("a b:80"))) }
    expect(badEndpoint.kind == ErrorKind.CONFIG && badEndpoint.detail.contains("a b:80")) { badEndpoint.detail }
    val badPem = failure {
        StnClient(ClientConfig(endpoints = listOf("127.0.0.1"), shortLinkPort = plainShort, tls = TlsConfig(roots = TlsRoots.PemCa("not pem"))))
    }
    expect(badPem.kind == ErrorKind.CONFIG) { badPem.detail }

    // The plain server: both links, pushes, identify, status, reports, hooks.
    val identify = Identify()
    val judge = TagJudge()
    val client = StnClient(
        ClientConfig(endpoints = listOf("127.0.0.1"), shortLinkPort = plainShort, longLinkPorts = listOf(plainLong)),
        judge = judge,
        identify = identify,
    )
    val statuses = Statuses()
    client.addLinkStatusListener(statuses)
    val pushes = Pushes()
    client.addPushListener(pushes)
    val throwing = ThrowingPushes()
    client.addPushListener(throwing)
    val reports = Reports()
    client.addReportListener(reports)
    val endpoint = "127.0.0.1:$plainLong"
    client.makeSureLongLinkConnected()

    // Identify: the first answer is rejected, which takes the link down; the
    // next connection identifies again with a new token and is accepted.
    eventually(10_000, "the first identify answer") { identify.answers.size >= 1 }
    eventually(10_000, "the link down after the rejection") { statuses.seen.contains(LinkStatus.Disconnected) }
    client.makeSureLongLinkConnected()
    eventually(10_000, "a second identify") { identify.answers.size >= 2 }
    expect(identify.answers[0] == "stn-identify-ok:kt-token-1" && identify.answers[1] == "stn-identify-ok:kt-token-2") { "${identify.answers}" }
    expect(statuses.seen.contains(LinkStatus.Connecting) && statuses.seen.contains(LinkStatus.Connected(endpoint))) { "${statuses.seen}" }

    bothLinks(client, "plain")
    expect(judge.judged.get() >= 202) { "judged ${judge.judged.get()}" }

    // Pushes through the callback, and a throwing listener is logged and kept.
    eventually(10_000, "3 pushes") { pushes.seen.size >= 3 }
    expect(pushes.seen.all { it.cmdId == 10001u && String(it.body).startsWith("push ") }) { "${pushes.seen}" }
    eventually(10_000, "the throwing listener's 2nd push") { throwing.calls.get() >= 2 }
    expect(logs.has(LogLevel.ERROR, "a listener threw")) { "no log line for the throwing listener" }

    // Link status: disabled and back.
    client.setLongLinkEnabled(false)
    eventually(5_000, "disabled") { statuses.seen.last() == LinkStatus.Disabled }
    val disabled = failure { client.send(longTask("while disabled")) }
    expect(disabled.kind == ErrorKind.LOCAL) { disabled.detail }
    client.setLongLinkEnabled(true)
    eventually(5_000, "connected again") { statuses.seen.last() == LinkStatus.Connected(endpoint) }

    // Reports: one per attempt, naming the endpoint.
    eventually(5_000, "reports") { reports.seen.size >= 200 }
    expect(reports.seen.any { it.channel == Channel.SHORT && it.endpoint == "127.0.0.1:$plainShort" && it.bytesReceived > 0UL }) { "short reports" }
    expect(reports.seen.any { it.channel == Channel.LONG && it.endpoint == endpoint }) { "long reports" }

    // A judge that throws ends its task with a decode error, logged.
    val judged = failure { client.send(shortTask("judge me").copy(userTag = 666UL)) }
    expect(judged.kind == ErrorKind.DECODE) { judged.detail }
    expect(logs.has(LogLevel.ERROR, "the response judge threw")) { "no log line for the judge" }

    // A body built per attempt; one that throws sends the fixed body.
    val built = client.send(shortTask("fixed").copy(bodySource = object : BodySource {
        override fun body(request: BodyRequest) = "attempt ${request.attempt} of task ${request.taskId}".toByteArray()
    }))
    expect(String(built.body) == "attempt 1 of task ${built.taskId}") { String(built.body) }
    val fallback = client.send(longTask("fixed body").copy(bodySource = object : BodySource {
        override fun body(request: BodyRequest): ByteArray = throw IllegalArgumentException("source bug")
    }))
    expect(String(fallback.body) == "fixed body") { String(fallback.body) }
    expect(logs.has(LogLevel.ERROR, "the body source threw")) { "no log line for the body source" }

    // Typed errors: a 404, a refused port.
    val notFound = failure { client.send(Task(cgi = "/nope", body = "x".toByteArray(), channel = Channel.SHORT)) }
    expect(notFound.kind == ErrorKind.HTTP_STATUS && notFound.httpStatus == 404.toUShort()) { notFound.message ?: "" }
    expect(notFound.marsCode == MarsCode(errType = 5, errCode = 404) && notFound.attempts == 1u) { notFound.message ?: "" }
    val refusedClient = StnClient(ClientConfig(endpoints = listOf("127.0.0.1"), shortLinkPort = port("STN_REFUSED_PORT")))
    val refused = failure { refusedClient.send(shortTask("x").copy(retryCount = 0u)) }
    expect(refused.kind == ErrorKind.CONNECT && refused.osError?.contains("refused", ignoreCase = true) == true) { refused.message ?: "" }
    // The stn profile does not retry a refusal into the deadline; Mars's does.
    val atOnce = failure { refusedClient.send(shortTask("x").copy(totalTimeoutMs = 600UL)) }
    expect(atOnce.kind == ErrorKind.CONNECT && atOnce.attempts == 1u) { atOnce.message ?: "" }
    refusedClient.shutdown()
    val marsClient = StnClient(
        ClientConfig(endpoints = listOf("127.0.0.1"), shortLinkPort = port("STN_REFUSED_PORT"), profile = Profile.MARS),
    )
    val timedOut = failure { marsClient.send(shortTask("x").copy(totalTimeoutMs = 600UL)) }
    expect(timedOut.kind == ErrorKind.TIMEOUT && timedOut.lastAttemptKind == ErrorKind.CONNECT) { timedOut.message ?: "" }
    expect(timedOut.lastAttempt?.contains("connection refused") == true) { timedOut.message ?: "" }
    marsClient.shutdown()

    // Auth: a need-auth task waits for set_authed; cancelling the coroutine
    // cancels the task; clear_tasks ends a held one with Cancelled.
    val cancelled = try {
        withTimeout(300) { client.send(shortTask("needs auth").copy(needAuthed = true)) }
        false
    } catch (e: TimeoutCancellationException) {
        true
    }
    expect(cancelled) { "a need-auth task finished before set_authed" }
    eventually(5_000, "the cancelled task gone") { client.snapshot().engineTasks == 0UL }
    val waiting = async { client.send(shortTask("after login").copy(needAuthed = true)) }
    delay(200)
    expect(!waiting.isCompleted) { "did not wait for auth" }
    client.setHostAuthed("", null, true)
    expect(String(waiting.await().body) == "after login") { "authed send" }
    client.setAuthed(false)
    val held = async { failure { client.send(shortTask("held").copy(needAuthed = true)) } }
    eventually(5_000, "the held task") { client.snapshot().engineTasks == 1UL }
    client.clearTasks()
    expect(held.await().kind == ErrorKind.CANCELLED) { "clear_tasks" }

    // The OS's controls; the client still works after each.
    client.setForeground(false)
    client.networkChanged(NetworkKind.MOBILE)
    client.networkLost()
    client.networkAvailable(NetworkKind.WIFI)
    client.setForeground(true)
    client.redoTasks()
    client.makeSureLongLinkConnected()
    expect(String(client.send(longTask("after controls")).body) == "after controls") { "send after controls" }
    expect(String(client.sendBlocking(shortTask("blocking")).body) == "blocking") { "blocking send" }

    // Endpoint history: export, import into a new client, garbage refused.
    val history = client.exportBanHistory()
    expect(history.isNotEmpty()) { "empty history" }
    val second = StnClient(ClientConfig(endpoints = listOf("127.0.0.1"), shortLinkPort = plainShort))
    expect(second.importBanHistory(history) >= 1UL) { "nothing imported" }
    val garbage = failure { second.importBanHistory("garbage".toByteArray()) }
    expect(garbage.kind == ErrorKind.HISTORY) { garbage.detail }
    second.shutdownBlocking()

    // TLS: the right CA on both links; a wrong CA and a wrong pin are typed.
    val tlsShort = port("STN_TLS_SHORT")
    val tlsLong = port("STN_TLS_LONG")
    fun tlsClient(tls: TlsConfig) = StnClient(ClientConfig(endpoints = listOf("127.0.0.1"), shortLinkPort = tlsShort, longLinkPorts = listOf(tlsLong), tls = tls))
    val pins = spkiPinsOfPem(caPem)
    val secure = tlsClient(TlsConfig(roots = TlsRoots.PemCa(caPem), spkiPins = pins))
    bothLinks(secure, "tls")
    val tlsSnapshot = secure.snapshot()
    expect(tlsSnapshot.tls.handshakes >= 2UL && tlsSnapshot.tls.failed == 0UL) { "$tlsSnapshot" }
    secure.shutdown()
    val wrongCa = tlsClient(TlsConfig(roots = TlsRoots.PemCa(wrongCaPem)))
    val unknown = failure { wrongCa.send(shortTask("x").copy(retryCount = 0u)) }
    expect(unknown.kind == ErrorKind.TLS && unknown.tlsFailure == TlsFailure.UnknownIssuer) { unknown.message ?: "" }
    wrongCa.shutdown()
    val wrongPin = tlsClient(TlsConfig(roots = TlsRoots.PemCa(caPem), spkiPins = listOf("sha256/" + "A".repeat(43) + "=")))
    val pinned = failure { wrongPin.send(shortTask("x").copy(retryCount = 0u)) }
    expect(pinned.kind == ErrorKind.TLS && pinned.tlsFailure == TlsFailure.PinMismatch) { pinned.message ?: "" }
    wrongPin.shutdown()

    // Shutdown: a pending task ends with Shutdown, later calls throw it.
    val pending = async { failure { client.send(shortTask("pending").copy(needAuthed = true)) } }
    eventually(5_000, "the pending task") { client.snapshot().engineTasks == 1UL }
    client.shutdown()
    expect(pending.await().kind == ErrorKind.SHUTDOWN) { "pending task at shutdown" }
    expect(client.isShutDown()) { "not shut down" }
    expect(failure { client.send(shortTask("late")) }.kind == ErrorKind.SHUTDOWN) { "send after shutdown" }
    expect(failure { client.snapshot() }.kind == ErrorKind.SHUTDOWN) { "snapshot after shutdown" }
    client.close()
    println("kotlin: $checks passed, 0 failed")
}
