import { startPeer } from '../test/support/peer.ts';
import { startAgent } from '../test/support/agent.ts';
import { simpleHttpService } from '../test/support/resources.ts';
import { buildRef, currentBuild } from '../bench/cost-build.ts';
const peer = await startPeer(simpleHttpService({ listenerPort: 24121, upstreamPort: 24122 }));
const builds = [currentBuild(), await buildRef('f54cb6a')];
for (let round = 0; round < 3; round++) for (const build of builds) {
  const t0 = Date.now();
  const agent = await startAgent({ discoveryAddress: peer.address, bin: build.bin });
  await agent.log.waitFor((e: any) => /epoch live|is LIVE|live/i.test(String(e.msg)), 10000).catch(() => {});
  await new Promise((r) => setTimeout(r, 300));
  const lines = agent.log.entries.map((e: any) => `${String(e.time - t0).padStart(5)} ${e.msg}`);
  console.log(`== ${build.label}\n` + lines.slice(0, 25).join('\n'));
  await agent.stop();
}
for (const b of builds) await b.remove();
await peer.stop();
