import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrationProvider } from './index.js';

const names = Object.keys(await migrationProvider.getMigrations());
const files = readdirSync(new URL('.', import.meta.url))
  .filter((file) => /^\d{4}_.*\.ts$/.test(file) && !file.endsWith('.test.ts'))
  .map((file) => file.replace(/\.ts$/, ''));

describe('the migration list', () => {
  it('names every migration NNNN_snake_case', () => {
    expect(names.filter((name) => !/^\d{4}_[a-z0-9_]+$/.test(name))).toEqual([]);
  });

  it('gives each number to one migration (branches that picked the same number collide here)', () => {
    const numbers = names.map((name) => name.slice(0, 4));
    const repeated = numbers.filter((number, index) => numbers.indexOf(number) !== index);
    expect(repeated).toEqual([]);
  });

  it('registers every migration file under its file name, and nothing else', () => {
    expect([...names].sort()).toEqual([...files].sort());
  });
});
