// stn from Kotlin: one task on each link, then the server's pushes for two
// seconds. Args: HOST SHORT_PORT LONG_PORT (the commands are in the README).
package stn.example

import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import stn.*

fun main(args: Array<String>) = runBlocking {
    val client = StnClient(
        ClientConfig(
            endpoints = listOf(args[0]),
            shortLinkPort = args[1].toInt().toUShort(),
            longLinkPorts = listOf(args[2].toInt().toUShort()),
        ),
    )
    client.addLinkStatusListener(object : LinkStatusListener {
        override fun onLinkStatus(status: LinkStatus) = println("long link: $status")
    })
    client.addPushListener(object : PushListener {
        override fun onPush(push: Push) = println("push ${push.cmdId}: ${String(push.body)}")
    })
    val short = client.send(Task(cgi = "/mars/hello2", body = "hi".toByteArray(), channel = Channel.SHORT))
    println("short link: HTTP ${short.status}, ${String(short.body)}")
    val long = client.send(Task(cmdId = 8u, body = "hello".toByteArray(), channel = Channel.LONG))
    println("long link: cmd ${long.cmdId}, ${String(long.body)}")
    try {
        client.send(Task(cgi = "/no/such/cgi", body = "x".toByteArray(), channel = Channel.SHORT))
    } catch (e: StnException.Failure) {
        println("error: ${e.kind} ${e.httpStatus}: ${e.detail}")
    }
    delay(2_000)
    client.shutdown()
}
