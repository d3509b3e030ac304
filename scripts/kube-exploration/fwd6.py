# fwd6.py LISTEN_IP6 PORT TARGET_IP4: a TCP forwarder from [LISTEN_IP6]:PORT to TARGET_IP4:PORT (istiod listens on one IPv4
# address; an IPv6-only pod reaches it here). Bytes only: TLS stays end to end between the agent and istiod.
import asyncio, sys
lip, port, tip = sys.argv[1], int(sys.argv[2]), sys.argv[3]
async def pipe(r, w):
    try:
        while data := await r.read(65536):
            w.write(data); await w.drain()
    except Exception: pass
    finally: w.close()
async def handle(r1, w1):
    try: r2, w2 = await asyncio.open_connection(tip, port)
    except Exception: w1.close(); return
    await asyncio.gather(pipe(r1, w2), pipe(r2, w1))
async def main():
    srv = await asyncio.start_server(handle, lip, port)
    async with srv: await srv.serve_forever()
asyncio.run(main())
