import { describe, expect, it } from 'vitest';
import { checkDecision, proposalProblems, proposalToAdopt } from './decisions.js';
import { ItemDefinition, definitionProblems, type ItemDefinitionInput } from './items.js';
import { answerLostBy, hasAnswer, type StoredAnswer } from './item-edit.js';

const def = (input: Partial<ItemDefinitionInput>) =>
  ItemDefinition.parse({ key: 'k', label: 'K', type: 'text', ...input });
const noSchema = () => undefined;
const answer = (partial: Partial<StoredAnswer>): StoredAnswer => ({
  status: 'submitted',
  value: undefined,
  secretSaved: false,
  files: [],
  ...partial,
});

describe('answerLostBy', () => {
  it('nothing is lost when there is no answer', () => {
    expect(hasAnswer(answer({}))).toBe(false);
    expect(answerLostBy(def({}), def({ type: 'number' }), answer({}), noSchema)).toBeUndefined();
  });

  it('a change of type loses any answer', () => {
    expect(answerLostBy(def({}), def({ type: 'longtext' }), answer({ value: 'x' }), noSchema)).toBe(
      'the type changes from text to longtext',
    );
  });

  it('a tighter bound loses a submitted value that breaks it, not one that fits', () => {
    const before = def({ constraints: { max_chars: 100 } });
    expect(
      answerLostBy(before, def({ constraints: { max_chars: 3 } }), answer({ value: 'hello' }), noSchema),
    ).toBe('max_chars: 5 characters is more than the 3 allowed');
    expect(
      answerLostBy(before, def({ constraints: { max_chars: 5 } }), answer({ value: 'hello' }), noSchema),
    ).toBeUndefined();
  });

  it('an empty optional answer submitted in the past is not lost by a change of its label', () => {
    const before = def({ required: false });
    expect(
      answerLostBy(before, def({ required: false, label: 'New' }), answer({ value: '' }), noSchema),
    ).toBeUndefined();
  });

  it('a draft is held to the draft checks only (lower bounds wait for submission)', () => {
    const after = def({ constraints: { min_chars: 10 } });
    expect(
      answerLostBy(def({}), after, answer({ status: 'pending', value: 'hi' }), noSchema),
    ).toBeUndefined();
    expect(answerLostBy(def({}), after, answer({ value: 'hi' }), noSchema)).toBe(
      'min_chars: at least 10 characters needed',
    );
  });

  it('removing a chosen option loses the choice', () => {
    const options = [
      { value: 'a', label: 'A' },
      { value: 'b', label: 'B' },
    ];
    const before = def({ type: 'select', options });
    const after = def({ type: 'select', options: [{ value: 'a', label: 'A' }] });
    expect(answerLostBy(before, after, answer({ value: 'b' }), noSchema)).toBe(
      'options: value must be one of a',
    );
    expect(answerLostBy(before, after, answer({ value: 'a' }), noSchema)).toBeUndefined();
  });

  it('files are rechecked by format, count and size', () => {
    const png = { content_type: 'image/png', size: 500, width: 800, height: 600 };
    const before = def({ type: 'file_list' });
    expect(
      answerLostBy(
        before,
        def({ type: 'file_list', constraints: { formats: ['pdf'] } }),
        answer({ files: [png] }),
        noSchema,
      ),
    ).toMatch(/^formats:/);
    expect(
      answerLostBy(
        before,
        def({ type: 'file_list', constraints: { min_width: 1000 } }),
        answer({ files: [png] }),
        noSchema,
      ),
    ).toMatch(/^min_width:/);
    expect(
      answerLostBy(
        before,
        def({ type: 'file_list', constraints: { min_count: 2 } }),
        answer({ files: [png] }),
        noSchema,
      ),
    ).toMatch(/^min_count:/);
    expect(
      answerLostBy(before, def({ type: 'file_list', label: 'New' }), answer({ files: [png] }), noSchema),
    ).toBeUndefined();
  });

  it('a secret is never opened: any change of its constraints counts as losing it', () => {
    const before = def({ type: 'secret' });
    expect(
      answerLostBy(before, def({ type: 'secret', label: 'New' }), answer({ secretSaved: true }), noSchema),
    ).toBeUndefined();
    expect(
      answerLostBy(
        before,
        def({ type: 'secret', constraints: { max_chars: 5 } }),
        answer({ secretSaved: true }),
        noSchema,
      ),
    ).toBeDefined();
  });
});

describe('decisions', () => {
  const owner = (input: Partial<ItemDefinitionInput>) => def({ assignee: 'owner', ...input });

  it('a proposal must be a valid answer for its item', () => {
    expect(
      proposalProblems([
        owner({ type: 'number', constraints: { max: 10 }, proposed: { value: 12, rationale: 'r' } }),
      ]),
    ).toEqual([{ item: 'k', field: 'proposed.value', message: 'max: value must be at most 10' }]);
    expect(proposalProblems([owner({ type: 'boolean', proposed: { value: true, rationale: 'r' } })])).toEqual(
      [],
    );
  });

  it('owner items take values only, and proposals belong to owner items', () => {
    const problems = definitionProblems(
      [owner({ type: 'image' }), def({ key: 'other', proposed: { value: 'x', rationale: 'r' } })],
      noSchema,
    );
    expect(problems.map((p) => p.field)).toEqual(['assignee', 'proposed']);
  });

  it('a person must decide with a valid value', () => {
    expect(checkDecision(owner({ type: 'boolean' }), null)).toEqual({
      ok: false,
      message: 'a decision needs a value',
    });
    expect(checkDecision(owner({ type: 'boolean' }), 'yes').ok).toBe(false);
    expect(checkDecision(owner({ type: 'boolean' }), false)).toEqual({ ok: true });
  });

  it('the proposal is adopted only for an undecided owner item that has one', () => {
    const proposed = owner({ proposed: { value: 'Acme', rationale: 'from the website' } });
    expect(proposalToAdopt(proposed, { status: 'pending', decided_by: null })).toEqual({ value: 'Acme' });
    expect(proposalToAdopt(proposed, { status: 'approved', decided_by: 'owner' })).toBeUndefined();
    expect(proposalToAdopt(owner({}), { status: 'pending', decided_by: null })).toBeUndefined();
    expect(proposalToAdopt(def({}), { status: 'pending', decided_by: null })).toBeUndefined();
  });
});
