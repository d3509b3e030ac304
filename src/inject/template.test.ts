import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentError } from '../shared/errors.ts';
import { parseTemplate, renderNode } from './template.ts';

const vars = { image: 'proxy:1', port: 15001, resources: { limits: { cpu: '1' } }, nothing: null };

describe('renderNode', () => {
  it('replaces placeholders inside strings by their text', () => {
    assert.deepEqual(renderNode({ image: '{{ image }}', args: ['-p', '{{port}}', 'x{{ image }}y'] }, vars, 't.yaml'), {
      image: 'proxy:1',
      args: ['-p', '15001', 'xproxy:1y'],
    });
  });

  it('inserts values as data with "{{ yaml name }}", and drops keys that render to null', () => {
    assert.deepEqual(renderNode({ resources: '{{ yaml resources }}', port: '{{ yaml port }}', gone: '{{ yaml nothing }}' }, vars, 't.yaml'), {
      resources: { limits: { cpu: '1' } },
      port: 15001,
    });
  });

  it('leaves numbers, booleans and plain strings alone', () => {
    assert.deepEqual(renderNode({ a: 1, b: true, c: 'plain {text}' }, vars, 't.yaml'), { a: 1, b: true, c: 'plain {text}' });
  });

  it('refuses an unknown name and a mapping used as text', () => {
    assert.throws(() => renderNode('{{ imag }}', vars, 't.yaml'), (error: unknown) => {
      assert.ok(error instanceof AgentError && error.code === 'BAD_TEMPLATE' && error.exitCode === 2);
      assert.equal(error.message, 't.yaml: {{ imag }}: no such value');
      return true;
    });
    assert.throws(() => renderNode('x {{ resources }}', vars, 't.yaml'), /use "\{\{ yaml resources \}\}"/);
  });
});

describe('parseTemplate', () => {
  it('reads the four sections', () => {
    const template = parseTemplate('containers: [{name: p}]\nholdApplicationLifecycle: {postStart: {}}\n', 't.yaml');
    assert.deepEqual(template.containers, [{ name: 'p' }]);
    assert.deepEqual(template.initContainers, []);
    assert.deepEqual(template.holdApplicationLifecycle, { postStart: {} });
  });

  it('rejects unknown sections, unnamed entries and broken YAML', () => {
    assert.throws(() => parseTemplate('sidecars: []', 't.yaml'), /^AgentError: t\.yaml: sidecars: unknown key/);
    assert.throws(() => parseTemplate('volumes: [{emptyDir: {}}]', 't.yaml'), /t\.yaml: volumes: must be a list of mappings with a name/);
    assert.throws(() => parseTemplate('containers: [', 't.yaml'), /t\.yaml: not valid YAML: /);
  });
});
