import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cycles, repositoryReaches, unitGraph, valueImports, type ValueImport } from './import-graph.js';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

/** Unit pairs that import each other, each once ("a <-> b", a before b). */
function mutualPairs(graph: Map<string, Set<string>>): string[] {
  const pairs: string[] = [];
  for (const [a, targets] of graph) {
    for (const b of targets) if (a < b && graph.get(b)?.has(a)) pairs.push(`${a} <-> ${b}`);
  }
  return pairs.sort();
}

describe('module boundaries (value imports between units of src/)', () => {
  const imports = valueImports(SRC);
  const graph = unitGraph(imports);

  it('reads the real import graph', () => {
    // A checker that found nothing to check would pass anything.
    expect(imports.length).toBeGreaterThan(500);
    expect(graph.get('modules/portal')).toContain('modules/intakes');
  });

  it('has no two units that import each other', () => {
    expect(mutualPairs(graph)).toEqual([]);
  });

  it('has no import cycle among units', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("has no module importing another module's repository (call its service)", () => {
    expect(repositoryReaches(imports).map(({ from, to }) => `${from} -> ${to}`)).toEqual([]);
  });
});

describe('the boundary checker itself', () => {
  const edges = (...pairs: [string, string][]): ValueImport[] => pairs.map(([from, to]) => ({ from, to }));

  it('finds a cycle through three modules, and none in a chain', () => {
    const cyclic = unitGraph(
      edges(
        ['modules/a/a.service.ts', 'modules/b/b.service.ts'],
        ['modules/b/b.service.ts', 'modules/c/c.service.ts'],
        ['modules/c/c.routes.ts', 'modules/a/a.schemas.ts'],
      ),
    );
    expect(cycles(cyclic)).toEqual([['modules/a', 'modules/b', 'modules/c']]);
    const chain = unitGraph(
      edges(['modules/a/a.service.ts', 'modules/b/b.service.ts'], ['modules/b/b.service.ts', 'lib/ids.ts']),
    );
    expect(cycles(chain)).toEqual([]);
  });

  it('counts the composition root (files directly under src/) as no unit', () => {
    const graph = unitGraph(
      edges(['app.ts', 'modules/a/a.routes.ts'], ['modules/a/a.service.ts', 'services.ts']),
    );
    expect(cycles(graph)).toEqual([]);
    expect(graph.has('root')).toBe(false);
  });

  it("flags another module's repository, not one's own nor the composition root's use", () => {
    const found = repositoryReaches(
      edges(
        ['modules/a/a.service.ts', 'modules/b/b.repository.ts'],
        ['modules/b/b.service.ts', 'modules/b/b.repository.ts'],
        ['subscribers.ts', 'modules/b/b.repository.ts'],
      ),
    );
    expect(found).toEqual([{ from: 'modules/a/a.service.ts', to: 'modules/b/b.repository.ts' }]);
  });
});
