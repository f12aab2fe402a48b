import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { unitSender, unitsSupported } from './pg-units.js';

describe('units of statements', () => {
  it("build on pg's Query as installed", () => {
    expect(unitsSupported(pg)).toBe(true);
    expect(unitSender(pg)).toBeTypeOf('function');
  });

  it("are not sent when pg's Query lacks a step they override", () => {
    class WithoutRows {
      prepare(): void {}
      hasBeenParsed(): boolean {
        return false;
      }
    }
    const changed = { Query: WithoutRows } as unknown as Pick<typeof pg, 'Query'>;
    expect(unitsSupported(changed)).toBe(false);
    expect(unitSender(changed)).toBeUndefined();
  });
});
