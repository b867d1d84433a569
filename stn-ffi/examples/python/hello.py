"""stn from Python: one task on each link, then the server's pushes for two
seconds. Args: HOST SHORT_PORT LONG_PORT (the commands are in the README)."""

import asyncio
import sys

from stn_ffi import (Channel, ClientConfig, LinkStatusListener, PushListener,
                     StnClient, StnError, Task)


class Print(PushListener, LinkStatusListener):
    def on_push(self, push):
        print(f"push {push.cmd_id}: {push.body.decode()}")

    def on_link_status(self, status):
        print(f"long link: {status}")


async def main(host, short_port, long_port):
    client = StnClient(ClientConfig(endpoints=[host], short_link_port=short_port,
                                    long_link_ports=[long_port]))
    client.add_link_status_listener(Print())
    client.add_push_listener(Print())
    short = await client.send(Task(cgi="/mars/hello2", body=b"hi", channel=Channel.SHORT))
    print(f"short link: HTTP {short.status}, {short.body.decode()}")
    long = await client.send(Task(cmd_id=8, body=b"hello", channel=Channel.LONG))
    print(f"long link: cmd {long.cmd_id}, {long.body.decode()}")
    try:
        await client.send(Task(cgi="/no/such/cgi", body=b"x", channel=Channel.SHORT))
    except StnError.Failure as e:
        print(f"error: {e.kind} {e.http_status}: {e.detail}")
    await asyncio.sleep(2)
    await client.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
