"""The Python side of the per-call overhead benchmark (bench/run.sh):
sequential calls through the bindings, each finished before the next.
  python-blocking: send_blocking from the main thread;
  python-asyncio:  await send in one asyncio task.
Args: SHORT_PORT LONG_PORT CALLS ROUNDS. Prints wall and CPU µs per call."""

import asyncio
import sys
import time

from stn_ffi import Channel, ClientConfig, Header, StnClient, Task


def task(link, i):
    body = f"bench {i:08d}".encode()
    if link == "long":
        return Task(cmd_id=8, body=body, channel=Channel.LONG, limit_frequency=False)
    return Task(cmd_id=8, cgi="/mars/hello2", body=body, channel=Channel.SHORT,
                headers=[Header(name="Connection", value="Keep-Alive")], limit_frequency=False)


def report(mode, link, per_round):
    wall = sorted(r[0] for r in per_round)
    cpu = sorted(r[1] for r in per_round)
    print(f"{mode:<16} {link:<6} wall {wall[len(wall) // 2]:8.1f} us/call (fastest round {wall[0]:8.1f})"
          f"  cpu {cpu[len(cpu) // 2]:8.1f} us/call", flush=True)


def per_call(start, cpu, calls):
    """Wall and process CPU µs per call since (start, cpu)."""
    return ((time.perf_counter() - start) * 1e6 / calls, (time.process_time() - cpu) * 1e6 / calls)


def measure_blocking(client, link, calls, rounds):
    for i in range(calls):
        client.send_blocking(task(link, i))
    out = []
    for _ in range(rounds):
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(calls):
            client.send_blocking(task(link, i))
        out.append(per_call(start, cpu, calls))
    return out


async def measure_async(client, link, calls, rounds):
    for i in range(calls):
        await client.send(task(link, i))
    out = []
    for _ in range(rounds):
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(calls):
            await client.send(task(link, i))
        out.append(per_call(start, cpu, calls))
    return out


def main():
    short, long, calls, rounds = map(int, sys.argv[1:5])
    client = StnClient(ClientConfig(endpoints=["127.0.0.1"], short_link_port=short, long_link_ports=[long]))
    for link in ("long", "short"):
        report("python-blocking", link, measure_blocking(client, link, calls, rounds))
        report("python-asyncio", link, asyncio.run(measure_async(client, link, calls, rounds)))
    client.shutdown_blocking()


if __name__ == "__main__":
    main()
