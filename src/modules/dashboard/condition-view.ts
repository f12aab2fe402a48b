import type { ShowIf } from '../../domain/conditions.js';

/** The item a condition tests, as its definition names it. */
export interface ConditionSource {
  label: string;
  type: string;
  options?: readonly { value: string; label: string }[] | undefined;
}

/** Words of the page's language the reason is made of. */
export interface ConditionWords {
  yes: string;
  no: string;
  /** Joins the last two of several answers: "Shop or Blog". */
  or: string;
}

/**
 * Why an item is asked only sometimes, in parts a sentence of the page's language is built from: the
 * earlier item's label and the answers that make the item apply, as the client chose them (Yes/No,
 * an option's label, a quoted text). `answered`: asked once the earlier item has any answer.
 */
export type ConditionReason =
  { kind: 'answered'; item: string } | { kind: 'equals'; item: string; value: string };

export function conditionReason(
  condition: ShowIf,
  source: ConditionSource | undefined,
  words: ConditionWords,
): ConditionReason {
  const item = source?.label ?? condition.item_key;
  if (condition.answered) return { kind: 'answered', item };
  const wanted: (string | boolean)[] =
    condition.equals !== undefined ? [condition.equals] : [...(condition.in ?? [])];
  const shown = wanted.map((value) => {
    if (typeof value === 'boolean') return value ? words.yes : words.no;
    const option = source?.options?.find((o) => o.value === value);
    return option ? option.label : `“${value}”`;
  });
  const value =
    shown.length <= 1
      ? (shown[0] ?? '')
      : `${shown.slice(0, -1).join(', ')} ${words.or} ${shown[shown.length - 1] ?? ''}`;
  return { kind: 'equals', item, value };
}
