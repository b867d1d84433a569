// The Kotlin side of the per-call overhead benchmark (bench/run.sh):
// sequential calls through the bindings, each finished before the next.
//   sendBlocking: from the main thread;
//   suspend:      `send` awaited in a loop inside one runBlocking coroutine.
// Args: SHORT_PORT LONG_PORT CALLS ROUNDS. Prints wall and CPU µs per call.
package stn.bench

import java.lang.management.ManagementFactory
import kotlinx.coroutines.runBlocking
import stn.*

fun task(link: String, i: Int): Task {
    val body = "bench %08d".format(i).toByteArray()
    return if (link == "long") Task(cmdId = 8u, body = body, channel = Channel.LONG, limitFrequency = false)
    else Task(cmdId = 8u, cgi = "/mars/hello2", body = body, channel = Channel.SHORT,
        headers = listOf(Header("Connection", "Keep-Alive")), limitFrequency = false)
}

val os = ManagementFactory.getOperatingSystemMXBean() as com.sun.management.OperatingSystemMXBean

/** Each round's wall and process CPU µs per call (JIT and GC threads included). */
inline fun measure(calls: Int, rounds: Int, call: (Int) -> Unit): List<Pair<Double, Double>> {
    for (i in 0 until calls) call(i)
    return (0 until rounds).map {
        val start = System.nanoTime()
        val cpu = os.processCpuTime
        for (i in 0 until calls) call(i)
        (System.nanoTime() - start) / 1e3 / calls to (os.processCpuTime - cpu) / 1e3 / calls
    }
}

fun report(mode: String, link: String, perRound: List<Pair<Double, Double>>) {
    val wall = perRound.map { it.first }.sorted()
    val cpu = perRound.map { it.second }.sorted()
    println("%-16s %-6s wall %8.1f us/call (fastest round %8.1f)  cpu %8.1f us/call".format(mode, link, wall[wall.size / 2], wall[0], cpu[cpu.size / 2]))
}

fun main(args: Array<String>) {
    val (short, long) = args[0].toInt().toUShort() to args[1].toInt().toUShort()
    val calls = args[2].toInt()
    val rounds = args[3].toInt()
    val client = StnClient(ClientConfig(endpoints = listOf("127.0.0.1"), shortLinkPort = short, longLinkPorts = listOf(long)))
    for (link in listOf("long", "short")) {
        report("kotlin-blocking", link, measure(calls, rounds) { client.sendBlocking(task(link, it)) })
        report("kotlin-suspend", link, runBlocking { measure(calls, rounds) { client.send(task(link, it)) } })
    }
    client.shutdownBlocking()
}
