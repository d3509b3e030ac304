import { startPeer } from '../test/support/peer.ts';
import { execa } from 'execa';
const peer = await startPeer((await import('../test/support/resources.ts')).simpleHttpService({ listenerPort: 24131, upstreamPort: 24132 }));
for (let i = 0; i < 3; i++) {
  const child = execa(process.execPath, ['--cpu-prof', '--cpu-prof-dir', '/tmp/prof', '--cpu-prof-interval', '200', 'bin/pilot-agent.js', 'proxy', 'sidecar', '--discoveryAddress', peer.address, '--configPath', `/tmp/prof/run/c${i}`, '--certDir', `/tmp/prof/run/certs${i}`, '--sdsSocket', `/tmp/prof/run/sds${i}.sock`, '--statusPort', String(24140 + i), '--proxyAdminPort', String(24150 + i)], { reject: false, stdout: 'pipe', stderr: 'pipe' });
  await new Promise((r) => setTimeout(r, 1500));
  child.kill('SIGTERM');
  await child;
}
await peer.stop();
