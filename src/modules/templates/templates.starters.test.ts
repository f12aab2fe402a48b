import { describe, expect, it } from 'vitest';
import { ItemDefinition, definitionProblems } from '../../domain/items.js';
import { compileJsonSchema } from '../../lib/json-schema.js';
import { STARTER_TEMPLATES, starterItems, starterSummary } from './templates.starters.js';

describe('ready-made templates', () => {
  it.each(
    STARTER_TEMPLATES.flatMap((s) => [
      [s.id, 'en'],
      [s.id, 'de'],
    ]),
  )('%s (%s) holds items the API accepts', (id, language) => {
    const items = (starterItems(id, language) ?? []).map((item) => ItemDefinition.parse(item));
    expect(items.length).toBeGreaterThanOrEqual(5);
    expect(definitionProblems(items, compileJsonSchema)).toEqual([]);
  });

  it('speaks German to a German account and English to the others', () => {
    const brand = STARTER_TEMPLATES[0];
    if (!brand) throw new Error('no starters');
    expect(starterSummary(brand, 'de').name).toBe('Markenpaket');
    expect(starterSummary(brand, 'fr').name).toBe('Brand kit');
    expect(starterItems('brand_kit', 'de')?.[0]?.label).toBe('Ihr Logo');
    expect(starterItems('nope', 'en')).toBeUndefined();
  });
});
