import { proxyContract } from '../../test/support/proxy-contract.ts';
import { FakeProxy } from './fake-proxy.ts';

proxyContract('FakeProxy (auto)', async () => {
  const proxy = new FakeProxy({ auto: true });
  return {
    proxy,
    hasLeftovers: async (epoch) => proxy.starts.some((start) => start.epoch === epoch) && !proxy.cleaned.includes(epoch),
    close: async () => undefined,
  };
});
