import assert from 'node:assert/strict';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
// Prometheus reads values with Go's ParseFloat: "Inf" and "NaN" in any case (prom-client writes "Nan").
const sampleValue = /^([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|[-+]?inf|nan)$/i;

/**
 * Parses Prometheus text format with a real parser, then checks what that
 * parser lets through: one HELP and one TYPE per family, each family in one
 * block, valid names and numeric values. Returns the families by name.
 */
export function parsePrometheus(text: string): Map<string, ReturnType<typeof parsePrometheusTextFormat>[number]> {
  const families = parsePrometheusTextFormat(text);
  const byName = new Map<string, (typeof families)[number]>();
  for (const family of families) {
    assert.match(family.name, metricName, `metric name ${family.name}`);
    assert.ok(!byName.has(family.name), `family ${family.name} appears in more than one block`);
    byName.set(family.name, family);
  }
  checkMetadataOnce(text);
  checkValues(text);
  return byName;
}

function checkMetadataOnce(text: string): void {
  const seen = new Set<string>();
  for (const match of text.matchAll(/^# (HELP|TYPE) (\S+)/gm)) {
    const key = `${match[1]} ${match[2]}`;
    assert.ok(!seen.has(key), `duplicate ${key}`);
    seen.add(key);
  }
}

function checkValues(text: string): void {
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const value = line.slice(line.lastIndexOf('}') + 1).trim().split(/\s+/)[line.includes('}') ? 0 : 1];
    assert.match(value ?? '', sampleValue, `sample value in: ${line.slice(0, 200)}`);
  }
}
