import { describe, expect, it } from 'vitest';
import { TOOLS_BY_NAME } from './mcp.tools.js';
import { restRequestOf } from './mcp.executor.js';

describe('a tool over several endpoints (manage_recipients)', () => {
  const tool = TOOLS_BY_NAME.get('manage_recipients');
  if (!tool) throw new Error('manage_recipients is not defined');

  it('makes exactly one REST request, picked by action, which is not sent', () => {
    expect(
      restRequestOf(tool, { intake_id: 'in_1', action: 'add', email: 'a@example.com', name: 'A' }),
    ).toEqual({
      request: {
        method: 'POST',
        path: '/v1/intakes/in_1/recipients',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'a@example.com', name: 'A' }),
      },
    });
    expect(restRequestOf(tool, { intake_id: 'in_1', action: 'remove', email: 'a+b@example.com' })).toEqual({
      request: { method: 'DELETE', path: '/v1/intakes/in_1/recipients/a%2Bb%40example.com', headers: {} },
    });
    expect(restRequestOf(tool, { intake_id: 'in_1', action: 'reinstate', email: 'a@example.com' })).toEqual({
      request: { method: 'POST', path: '/v1/intakes/in_1/recipients/a%40example.com/reinstate', headers: {} },
    });
  });

  it('refuses a missing or unknown action, and unknown arguments, without a request', () => {
    for (const args of [
      { intake_id: 'in_1', email: 'a@example.com' },
      { intake_id: 'in_1', action: 'promote', email: 'a@example.com' },
      { intake_id: 'in_1', action: 'add', email: 'a@example.com', role: 'owner' },
    ]) {
      const built = restRequestOf(tool, args);
      expect('refused' in built && built.refused.error).toBe('invalid_request');
    }
  });
});
