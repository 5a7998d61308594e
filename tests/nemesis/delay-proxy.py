#!/usr/bin/env python3
"""delay-proxy.py - a TCP proxy that can delay what it forwards.

Usage: delay-proxy.py --dir D --map NAME:LPORT:HOST:PORT [--map ...]

Listens on 127.0.0.1:LPORT for each map (LPORT 0: a port the kernel
chooses) and forwards every connection to HOST:PORT, both ways. Each chunk
read is written out DELAY ms after it arrived, in order, where DELAY is
the number in the file D/delay-NAME (missing or empty: 0), read again
every 100 ms: the nemesis turns the delay on and off for one client by
writing that file. Once a changed delay is in effect the proxy writes it
to D/applied-NAME. The kernel here has no netem qdisc, hence this proxy.
Loss comes from nftables, not from here. Prints "ready" and the port each
map listens on, in the order of the maps, as one line on stdout once every
port listens ("ready 41234 41235"). A caller that wants a free port passes
0 and reads it there: a port found free and closed before the proxy binds
it can be taken in between (any outgoing connection may be given it).
"""
import argparse
import asyncio
import os
import sys

delays = {}


async def poll_delays(d):
    while True:
        for name in list(delays):
            was = delays[name]
            try:
                with open(os.path.join(d, "delay-" + name)) as f:
                    txt = f.read().strip()
                delays[name] = int(txt) / 1000.0 if txt else 0.0
            except (OSError, ValueError):
                delays[name] = 0.0
            if delays[name] != was:
                # for a test that must know when a new delay holds
                with open(os.path.join(d, "applied-" + name), "w") as f:
                    f.write("%d\n" % round(delays[name] * 1000))
        await asyncio.sleep(0.1)


async def pump(name, reader, writer):
    """Copy reader to writer, each chunk held back by the current delay."""
    loop = asyncio.get_running_loop()
    q = asyncio.Queue()

    async def sender():
        while True:
            due, data = await q.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    task = asyncio.ensure_future(sender())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            await q.put((loop.time() + delays.get(name, 0.0), data))
    except (ConnectionError, OSError):
        pass
    await q.put((0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass
    try:
        writer.close()
    except (ConnectionError, OSError):
        pass


def handler(name, host, port):
    async def handle(creader, cwriter):
        try:
            sreader, swriter = await asyncio.open_connection(host, port)
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(pump(name, creader, swriter), pump(name, sreader, cwriter),
                             return_exceptions=True)
    return handle


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--map", action="append", default=[])
    a = ap.parse_args()
    bound = []
    for m in a.map:
        name, lport, host, port = m.split(":")
        delays.setdefault(name, 0.0)
        srv = await asyncio.start_server(handler(name, host, int(port)), "127.0.0.1", int(lport))
        bound.append(str(srv.sockets[0].getsockname()[1]))
    print(" ".join(["ready"] + bound), flush=True)
    await poll_delays(a.dir)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
