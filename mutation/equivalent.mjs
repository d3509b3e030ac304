// Mutants no behaviour can tell apart from the code (equivalent mutants),
// each with why. Stryker's ignorer plugin skips every mutant inside a node
// whose source text is exactly `code` in a file ending in `file` (and,
// when `parent` is given, whose parent node's text is exactly that); keep
// each `code` as small as the equivalent mutant's expression, so nothing
// else in the node goes unchecked.
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

export const equivalent = [
  {
    file: 'src/bootstrap/stats-annotations.ts',
    code: 'a > b ? 1 : 0',
    why: "the bucket prefixes are an object's keys, never equal, and V8's sort only asks whether the comparator is below 0: 1 and 0 order them the same",
  },
  {
    file: 'src/bootstrap/stats-annotations.ts',
    code: "typeof bucket === 'number'",
    why: 'Number.isFinite does not coerce: it is false for anything not a number, so a string, boolean or null bucket is refused without the typeof',
  },
  {
    file: 'src/health/probe-config.ts',
    code: "typeof given !== 'number'",
    why: 'Number.isInteger is false for anything not a number, so the next test already refuses a string, a list or an object',
  },
  {
    file: 'src/health/probe-config.ts',
    code: 'value !== null',
    why: 'isObject never sees null: parseHealthProbe returns early on null, and a null action is not counted, so exec is never read as null',
  },
  {
    file: 'src/metrics/exposition.ts',
    code: 'Number.isNaN(value)',
    why: "String(NaN) is 'NaN' too: without the check, NaN falls through to String(value) and is spelled the same",
  },
  {
    file: 'src/xds/relay/response-leg.ts',
    code: 'this.#options.unimplemented?.()',
    why: "#deltaUnimplemented is only reached through `status.code === UNIMPLEMENTED && this.#options.unimplemented`: the hook is always there when it is called",
  },
  {
    file: 'src/envoy/leftovers.ts',
    code: 'process.getuid?.()',
    why: 'the agent runs on Linux, where process.getuid always exists: the optional call and the plain one are the same',
  },
  {
    file: 'src/envoy/leftovers.ts',
    code: '/^\\d+$/',
    why: "a /proc entry that is not all digits ('self', 'x12', '12x') gives Number() NaN, and /proc/NaN has no cmdline: the anchors only decide which names reach that dead end",
  },
  {
    file: 'src/envoy/stderr-fifo.ts',
    code: "{ stdin: 'ignore' }",
    why: "mkfifo never reads its stdin: execa's default pipe is made and closed unread, and the FIFO is the same",
  },
  {
    file: 'src/status/merged-metrics.ts',
    code: 'filter.dropPartial();',
    why: "after Envoy's part broke off or hit its cap nothing reads the filter's cut line again: envoyPart returns, and the app's part goes through text(), which never looks at it",
  },
  {
    file: 'src/status/pipeline.ts',
    code: '() => void (lane.waiting = [])',
    why: "a closed connection is destroyed: each waiting request's #run returns at `socket.destroyed`, and no resume follows; the list goes with the lane, a WeakMap entry of the socket",
  },
  {
    file: 'src/status/pipeline.ts',
    code: "socket.once('close', () => void (lane.waiting = []));",
    why: 'the same listener as the entry above, not added at all: equivalent for the same reason',
  },
  {
    file: 'src/status/pipeline.ts',
    code: "'close'",
    parent: "socket.once('close', () => void (lane.waiting = []))",
    why: 'the same listener as the entry above, never called: equivalent for the same reason',
  },
  {
    file: 'src/status/readiness.ts',
    code: "'LIVE'",
    why: 'serverStates[0] names state 0, and describeState is only called when server.state is not 0 (LIVE is judged on workers and config instead): no reason ever shows it',
  },
  {
    file: 'src/watch/cert-set.ts',
    code: '{\n    return undefined;\n  }',
    why: "the catch of readCertNotAfter: an empty block falls through to the function's end, which returns undefined too",
  },
  {
    file: 'src/watch/cert-set.ts',
    code: '-1',
    why: 'the length written for an absent file only has to differ from what a present file writes: +1 does too, since a present file of length 1 also writes its byte, and with the same absolute paths in the same order no two sets of files then give the same stream',
  },
  {
    file: 'src/iptables/rules.ts',
    code: "inboundPorts !== '*'",
    parent: "inboundPorts !== '*' && inboundPorts.length === 0",
    why: "'*'.length is 1, so the length test alone already tells '*' from an empty list",
  },
  {
    // Moved with the iptables rewrite from rules.ts to routes.ts, which is not (yet) in the iptables room.
    file: 'src/iptables/routes.ts',
    code: "config.inboundPorts === '*'",
    why: "'*'.length is 1, so the length test alone already says inbound capture is on for '*'",
  },
  {
    file: 'src/iptables/rules.ts',
    code: '[]',
    parent: "include === '*' ? [] : include[family]",
    why: "with -i '*' the function returns before the loop over cidrs, so what cidrs holds then is never read",
  },
  {
    file: 'src/iptables/config.ts',
    code: 'given.text.trim()',
    parent: 'Number(given.text.trim())',
    why: 'Number() skips the same leading and trailing white space and line terminators that trim() removes',
  },
  {
    file: 'src/iptables/ports.ts',
    code: 'text.trim()',
    parent: 'Number(text.trim())',
    why: 'Number() skips the same leading and trailing white space and line terminators that trim() removes',
  },
  {
    file: 'src/iptables/ports.ts',
    code: "''",
    parent: "address = ''",
    why: "split('/') returns at least one item, so the default of the first is never used",
  },
  {
    file: 'src/iptables/config.ts',
    code: "''",
    parent: "address = ''",
    why: "split('/') returns at least one item, so the default of the first is never used",
  },
  {
    file: 'src/iptables/config.ts',
    code: "''",
    parent: "bits = ''",
    why: 'a loopback CIDR without a slash: any default that is not all digits (Stryker\'s text too) gives the same refused prefix -1',
  },
  {
    file: 'src/iptables/config.ts',
    code: '-1',
    why: 'the prefix of a loopback CIDR whose bits are not digits: +1 is under the minimum of 8 too, the same refusal',
  },
  {
    file: 'src/iptables/config.ts',
    code: "'127.'",
    parent: "address.startsWith('127.')",
    why: 'the loopback CIDR check ends with isLoopbackCidr(text), which for an IPv4 address tests the same 127. start, so this test never decides alone',
  },
  {
    file: 'src/grpc/field-scanner.ts',
    code: 'false',
    parent: '#wanted = false;',
    why: 'read only in the length state, which only a length-delimited tag enters, and that tag sets it first',
  },
  {
    file: 'src/grpc/field-scanner.ts',
    code: "'the field scanner'",
    why: 'the parser named in a NoProgress message: it only shows when a step fails to advance, which no step of the scanner does (advanced() itself, and its message, are tested directly)',
  },
  {
    file: 'src/grpc/grpc-frame.ts',
    code: "'the gRPC frame reader'",
    why: 'the parser named in a NoProgress message: it only shows when a step fails to advance, which no step of the reader does (advanced() itself, and its message, are tested directly)',
  },
  {
    file: 'src/ca/check-chain.ts',
    code: "''",
    parent: "leaf.subjectAltName ?? ''",
    why: "a leaf without SANs: any text that has no 'URI:' item (Stryker's 'Stryker was here!' too) yields no URI, the same refusal",
  },
  {
    file: 'src/ca/check-chain.ts',
    code: "'an unreadable date'",
    why: 'a date Date.parse cannot read: node:crypto prints every validFrom/validTo X.509 can hold (UTCTime from 1950 to GeneralizedTime 9999, checked) in a form Date.parse reads, so no certificate reaches it',
  },
  {
    file: 'src/bootstrap/template.ts',
    code: 'found === null',
    parent: "found === null || typeof found === 'object'",
    why: "typeof null is 'object', so the second test alone refuses null too (the null test says so for the reader)",
  },
  {
    file: 'src/settings/parse-values.ts',
    code: "''",
    parent: "component = ''",
    why: "split(':') always returns at least one element, so the component's default is never used",
  },
  {
    file: 'src/dns/answer-match.ts',
    code: 'at + 1 + length',
    parent: 'at + 1 + length > message.length',
    why: 'a label that runs past the end moves `at` past the end, and the loop then returns undefined all the same: any sum here gives the same verdict',
  },
  {
    file: 'src/dns/answer-match.ts',
    code: 'at + 1 + length > message.length',
    parent: 'length > 63 || at + 1 + length > message.length',
    why: 'a label running past the end (or ending at it) moves `at` to or past the end, where the loop returns undefined anyway',
  },
  {
    file: 'src/dns/resolv-conf.ts',
    code: "''",
    parent: "text = ''",
    why: 'kept only when the file is missing: any text without a nameserver or search line parses to nothing, as the empty one does',
  },
  {
    file: 'src/dns/last-known-good-table.ts',
    code: "typeof parsed === 'object'",
    why: 'JSON that is a string, number or boolean has no version field either, so the next test refuses it with the same reason; null is told by `parsed !== null`',
  },
  {
    file: 'src/dns/lookup-table.ts',
    code: 'name.length <= search.length',
    why: 'a name ending in the search domain and no longer than it is the domain itself: its base is empty, ends in no dot, and gives no twin either way',
  },
  {
    file: 'src/dns/lookup-table.ts',
    code: "base.endsWith('.')",
    why: 'every name the table holds ends in a dot (#altHosts adds one to each), so #find of a base without one finds nothing anyway',
  },
  {
    file: 'src/dns/lookup-table.ts',
    code: 'chain.length === 1',
    why: 'a chain of one slot is walked as the slot alone: one probe, the same answer; only the shape kept differs',
  },
  {
    file: 'src/dns/lookup-table.ts',
    code: 'this.#hash(each) === key',
    why: 'a name of another hash put in this map is never looked up in it (#find goes to its own bucket), and the size was counted before',
  },
  {
    file: 'src/dns/lookup-table.ts',
    code: 'this.#last?.at !== at',
    why: 'a cache of the entry read last: reading the bytes again gives the same host, info and names',
  },
  {
    file: 'src/dns/forwarder.ts',
    code: 'settled',
    parent: 'if (settled) return;',
    why: "only TCP settles twice ('close' after the destroy that settled it): the timer is cancelled, destroy is idempotent, the promise keeps its first value",
  },
  {
    file: 'src/dns/forwarder.ts',
    code: 'true',
    parent: 'settled = true',
    why: "as for `if (settled)`: a second settle (TCP's 'close' after the destroy) changes nothing anyone sees",
  },
  {
    file: 'src/dns/forwarder.ts',
    code: "'abort'",
    parent: "exchange.signal?.removeEventListener('abort', cancel)",
    why: 'the signal aborts only once Promise.any settled, and a cancel after the exchange settled does nothing',
  },
  {
    file: 'src/dns/forwarder.ts',
    code: "'cancelled'",
    why: 'a cancel comes only from losers.abort(), after Promise.any settled: the reasons of the cancelled exchanges are never read',
  },
  {
    file: 'src/dns/forwarder.ts',
    code: '{ once: true }',
    why: 'done removes the listener when the exchange settles, a cancel included, and the signal aborts once',
  },
  {
    file: 'src/dns/server.ts',
    code: "''",
    parent: "socket.remoteAddress ?? ''",
    why: 'an accepted socket has its remote address (only one already destroyed has none), and no other string is loopback either',
  },
  {
    file: 'src/dns/answer-match.ts',
    code: 'response.length < 12',
    why: 'a 12-byte response (header alone) has no question, so firstQuestion refuses it too: only the shorter ones need this test, and those are tested (a 3-byte reply returns false, never a throw)',
  },
  {
    file: 'src/dns/answer-match.ts',
    code: 'query.length < 12',
    why: 'as for the response: a 12-byte query has no question to match, and shorter ones are tested (a 1-byte query)',
  },
  {
    file: 'src/dns/resolv-conf.ts',
    code: 'values.filter(Boolean)',
    why: 'the line is trimmed and split on runs of whitespace, so no value is empty',
  },
  {
    file: 'src/dns/answer.ts',
    code: 'response.length > reply.limit',
    parent: "if (response.length > reply.limit) return fail(packet.id ?? 0, 'SERVFAIL');",
    why: 'after truncation only the header, one question and an 11-byte OPT remain: dns-packet refuses a name past 255 bytes or with a looping pointer (checked), so this never exceeds 512 and the guard never fires; its >= twin is killed by the exact-limit test, but goes with the node',
  },
  {
    file: 'src/grpcxds/bootstrap.ts',
    code: '{ mode: 0o644 }',
    why: 'the chmod right after the write sets 0644 whatever mode (and umask) the file was created with',
  },
  {
    file: 'src/grpcxds/bootstrap.ts',
    code: '{ force: true }',
    why: 'rm of the temporary after a failure: without force a missing file throws, which the .catch beside it swallows just the same; a present file is removed either way',
  },
  {
    file: 'src/xds/last-known-good/session.ts',
    code: '() => false',
    parent: 'clock.sleep(backoff.next(), signal).then(() => true, () => false)',
    why: "a clock's sleep rejects only when the stream's signal aborts, and the loop's next test (signal.aborted) then returns all the same",
  },
  {
    file: 'src/xds/last-known-good/recorder.ts',
    code: "mode === 'delta'",
    parent: "mode === 'delta' && fields.initialVersions === 0",
    why: 'the fresh-start set is read only when a Delta ACK is settled: a SotW type in it is never looked at',
  },
  {
    file: 'src/xds/upstream/credentials.ts',
    code: '!code',
    parent: 'if (!code) return undefined;',
    why: "without it an absent or empty code is tested as 'undefined' or '': neither matches any pattern, so the answer is undefined all the same",
  },
  {
    file: 'src/envoy/output.ts',
    code: `!line.startsWith('{"')`,
    why: "a shortcut past JSON.parse for Envoy's text lines: without it a text line fails JSON.parse (caught) or parses to no object with a string level and msg, and is a text line all the same",
  },
  {
    file: 'src/envoy/output.ts',
    code: '{\n    return undefined;\n  }',
    why: "the catch of parseJsonLine: an empty block falls through to the function's end, which returns undefined too",
  },
  {
    file: 'src/envoy/active-connections.ts',
    code: '[]',
    parent: 'ignoredPorts: readonly number[] = []',
    why: 'a default list with any non-number in it ignores nothing either: the port > 0 test is false for it',
  },
  {
    file: 'src/envoy/active-connections.ts',
    code: 'value.trim()',
    why: 'Number() ignores surrounding whitespace itself',
  },
  {
    file: 'src/envoy/cert-check.ts',
    code: 'group.key !== undefined',
    why: 'access(undefined) rejects, which exists() turns into false: the same as skipping it',
  },
  {
    file: 'src/envoy/cert-check.ts',
    code: '() => false',
    why: 'exists() is only ever a condition: undefined is as false as false',
  },
  {
    file: 'src/envoy/admin.ts',
    code: "'GET'",
    parent: "call('GET', path, signal)",
    why: "node:http sends GET for an empty method: '' and 'GET' make the same request",
  },
  {
    file: 'src/envoy/admin.ts',
    code: '{\n    return undefined;\n  }',
    why: "the catch of serverInfo: an empty block falls through to the function's end, which returns undefined too",
  },
  {
    file: 'src/status/negotiate.ts',
    code: "''",
    parent: "value = ''",
    why: "String.prototype.split always returns at least one element, so the first piece of part.split(';') is never undefined and the default never applies",
  },
  {
    file: 'src/status/negotiate.ts',
    code: "''",
    parent: "acceptEncoding ?? ''",
    why: 'the fallback only stands in for an absent header; any text there without a gzip entry gives the same answer, since preferences(undefined) is empty and so no `*` is found',
  },
  {
    file: 'src/status/negotiate.ts',
    code: 'a.index - b.index',
    why: "ties only: Array.prototype.sort is stable, and V8's TimSort (binary insertion and merges) only ever asks comparefn(later, earlier) of equal q's, so a positive answer (a.index + b.index) keeps their order as a.index - b.index does (checked on 20,000 random lists of up to 64 entries)",
  },
  {
    file: 'src/status/prometheus.ts',
    code: 'body.destroy()',
    why: "the return right after it leaves the for await loop, whose iterator's return() destroys the response stream anyway (Readable's async iterator destroys on return by default)",
  },
  {
    file: 'src/status/app-probes/redirects.ts',
    code: '/^\\[|\\]$/g',
    why: "a WHATWG URL's hostname has brackets only around an IPv6 address, first and last, so the anchors never decide anything",
  },
  {
    file: 'src/wasm/unbox.ts',
    code: '/\\0.*$/',
    why: 'the tar size field is read with parseInt, which stops at the first NUL (or any non-octal character) anyway: cutting from the NUL on, or not, or from another place, reads the same size',
  },
  {
    file: 'src/wasm/unbox.ts',
    code: "''",
    parent: "bytes.toString('latin1', 124, 136).replace(/\\0.*$/, '')",
    why: 'what replaces the NUL and what follows it in the tar size field is after the digits parseInt reads: a text there is not octal, so parseInt stops before it just as at the NUL',
  },
  {
    file: 'src/wasm/http-get.ts',
    code: "''",
    parent: "callback(error, '', 0)",
    why: 'the address handed to a lookup callback with an error is never read: net only sees the error',
  },
  {
    file: 'src/wasm/http-get.ts',
    code: "''",
    parent: 'callback(new FetchRefused(`${hostname}: ${refused}`), \'\', 0)',
    why: 'the address handed to a lookup callback with an error is never read: net only sees the error',
  },
  {
    file: 'src/wasm/http-get.ts',
    code: '/^\\[|\\]$/g',
    why: "URL.hostname has brackets only around an IPv6 literal, one first and one last: unanchored, either anchor dropped, removes the same two",
  },
  {
    file: 'src/wasm/http-get.ts',
    code: "'GET'",
    why: "node:http sends GET for an empty method, the same request",
  },
  {
    file: 'src/wasm/http-get.ts',
    code: "''",
    parent: "(error as NodeJS.ErrnoException)?.code ?? ''",
    why: 'the stand-in for a missing code only has to miss the plain-HTTP patterns, which any other text (Stryker\'s too) does',
  },
  {
    file: 'src/wasm/http-get.ts',
    code: "''",
    parent: "(error as Error)?.message ?? ''",
    why: 'the stand-in for a missing message only has to miss the plain-HTTP patterns, which any other text (Stryker\'s too) does',
  },
  {
    file: 'src/shared/cidr.ts',
    code: "''",
    parent: "net = ''",
    why: "split('/') always gives at least one part, so the default for the network is never taken",
  },
  {
    file: 'src/shared/cidr.ts',
    code: "''",
    parent: "bits = ''",
    why: 'a CIDR without a slash: any default that is not all digits (Stryker\'s text too) fails the digits test the same way, with the same error',
  },
  {
    file: 'src/wasm/ssrf.ts',
    code: '/^\\[|\\]$/g',
    why: 'URL.hostname has brackets only around an IPv6 literal, one first and one last: unanchored, either anchor dropped, removes the same two',
  },
  {
    file: 'src/wasm/oci-fetch.ts',
    code: "''",
    parent: "answer.headers['www-authenticate'] ?? ''",
    why: 'a 401 without a challenge: any stand-in that starts with neither basic nor bearer (Stryker\'s text too) leaves the 401, as the empty one does',
  },
  {
    file: 'src/wasm/convert.ts',
    code: "''",
    parent: "stringOf(entry, 1) ?? ''",
    why: 'an env entry without a key is stored under a key nobody reads: only the pull secret, pull policy and resource version keys are looked up',
  },
  {
    file: 'src/wasm/convert.ts',
    code: "''",
    parent: "stringOf(decodeMessage(field.value), 1) ?? ''",
    why: "an env entry without a key is kept: any stand-in that does not start with ISTIO_META_ (Stryker's text too) keeps it the same",
  },
  {
    file: 'src/inject/vars.ts',
    code: "captured !== '*'",
    parent: "captured !== '*' && captured.length === 0",
    why: "'*'.length is 1, so the length test alone already tells '*' from an empty list",
  },
  {
    file: 'src/inject/vars.ts',
    code: '[]',
    parent: "Array.isArray(container['ports']) ? (container['ports'] as unknown[]) : []",
    why: 'podPorts keeps only the mappings of the list (filter(isMapping)): any non-mapping put in for a container without ports is dropped too',
  },
  {
    file: 'src/inject/vars.ts',
    code: "''",
    parent: "from: ''",
    why: 'from is read only when explicit is true (the conflict check, the warning), and the declared ports are never explicit',
  },
  {
    file: 'src/inject/app-probes.ts',
    code: '[]',
    parent: "Array.isArray(container['ports']) ? (container['ports'] as unknown[]) : []",
    why: 'the named port is looked up among the mappings of the list only (isMapping(entry)): a non-mapping put in for a container without ports matches no name either',
  },
  {
    file: 'src/sds/socket.ts',
    code: 'info',
    parent: 'if (info) await rm(path, { force: true });',
    why: 'when lstat found nothing at the path, rm with force finds nothing either and removes nothing: the claim goes on the same',
  },
  {
    file: 'src/shared/downward-api.ts',
    code: "''",
    parent: "body.replace(escapePattern, '')",
    why: 'the valid escapes are replaced only to look at what is left for a quote, backslash or newline: any replacement without those three reads the same',
  },
  {
    file: 'src/shared/downward-api.ts',
    code: "'utf8'",
    parent: "Buffer.byteLength(body, 'utf8')",
    why: "Node's Buffer reads an empty encoding name as its default, utf8: the same bytes",
  },
  {
    file: 'src/shared/downward-api.ts',
    code: "'utf8'",
    parent: "out.write(body.slice(last, match.index), size, 'utf8')",
    why: "Node's Buffer reads an empty encoding name as its default, utf8: the same bytes",
  },
  {
    file: 'src/shared/downward-api.ts',
    code: "'utf8'",
    parent: "out.write(body.slice(last), size, 'utf8')",
    why: "Node's Buffer reads an empty encoding name as its default, utf8: the same bytes",
  },
  {
    file: 'src/shared/downward-api.ts',
    code: "'utf8'",
    parent: "Buffer.from(String.fromCodePoint(code), 'utf8')",
    why: "Node's Buffer reads an empty encoding name as its default, utf8: the same bytes",
  },
  {
    file: 'src/settings/env-settings.ts',
    code: 'name !== undefined',
    parent: 'name !== undefined && env[name]',
    why: 'find() returns the element it found: an undefined alsoEnv found through env["undefined"] is undefined, the same as nothing found',
  },
  {
    file: 'src/settings/agent-inputs.ts',
    code: 'proxyMetadata?.[name]',
    why: 'sourceOf only names a bad value (the DNS rows have no required one); without proxyMetadata that value came from the env, so env[name] is set and the || never reads proxyMetadata',
  },
  {
    file: 'src/shared/duration.ts',
    code: 'range.minMs !== undefined',
    parent: 'range.minMs !== undefined && ms < range.minMs',
    why: 'ms < undefined is false for every number: without the check an unset minimum passes the same',
  },
  {
    file: 'src/role/platform-locality.ts',
    code: "'GET'",
    parent: "method = 'GET'",
    why: "node:http sends GET for an empty method: '' and 'GET' make the same request",
  },
  {
    file: 'src/role/platform-locality.ts',
    code: '[]',
    parent: "typeof instanceIps === 'string' ? instanceIps.split(',') : []",
    why: 'for an INSTANCE_IPS that is not a string, any list of words holds no IPv6 address either: the answer is false both ways',
  },
];

const matches = (path, entry) => {
  const file = path.hub?.file?.opts?.filename ?? '';
  if (!file.endsWith(entry.file) || path.node.start == null || path.getSource() !== entry.code) return false;
  return entry.parent === undefined || path.parentPath?.getSource() === entry.parent;
};

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'equivalent', {
    shouldIgnore(path) {
      const entry = equivalent.find((candidate) => matches(path, candidate));
      return entry && `equivalent: ${entry.why}`;
    },
  }),
];
