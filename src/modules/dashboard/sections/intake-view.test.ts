import { describe, expect, it } from 'vitest';
import { groupedHistory } from './intake-view.js';

const entry = (
  at: string,
  item: string | null,
  what = 'sent in',
  who: string | null = 'Dana',
  note: string | null = null,
) => ({
  at: `2026-11-25T19:${at}Z`,
  what,
  item,
  who,
  note,
});

describe('the intake history for people', () => {
  it('puts what one person did to several items within a minute on one line, in the order done', () => {
    expect(
      groupedHistory([
        entry('06:30.000', 'Logo', 'approved', 'owner@example.com'),
        entry('06:02.000', 'Colours'),
        entry('06:01.000', 'Tagline'),
        entry('06:00.000', 'Logo'),
        entry('04:00.000', 'About'),
        entry('03:59.000', null, 'Portal link sent', null),
      ]).map((e) => [e.item, e.what, e.who]),
    ).toEqual([
      ['Logo', 'approved', 'owner@example.com'],
      ['Logo, Tagline, Colours', 'sent in', 'Dana'],
      ['About', 'sent in', 'Dana'],
      [null, 'Portal link sent', null],
    ]);
  });

  it('keeps a line with a note (a revision request) on its own', () => {
    const lines = groupedHistory([
      entry('06:01.000', 'Tagline', 'changes requested', 'owner', 'Shorter'),
      entry('06:00.000', 'Logo', 'changes requested', 'owner', 'Bigger'),
    ]);
    expect(lines).toHaveLength(2);
  });
});
