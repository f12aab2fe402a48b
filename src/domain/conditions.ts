import { z } from 'zod';

/**
 * Sections and conditional items: which items of a request apply given the answers so far, and what
 * is wrong with a list of conditions. One rule for completion, progress, reminders, results and the
 * portal. No I/O.
 */

/** Kinds of item whose answer another item may depend on. */
export const CONDITION_SOURCE_TYPES = ['select', 'multiselect', 'boolean', 'text'] as const;

export const ShowIf = z
  .strictObject({
    item_key: z
      .string()
      .min(1)
      .max(64)
      .meta({ description: 'An earlier item (select, multiselect, boolean or text)' }),
    equals: z
      .union([z.string().max(200), z.boolean()])
      .optional()
      .meta({
        description: 'Shown when the answer is this value (a multiselect: when this choice is among them)',
      }),
    in: z.array(z.string().max(200)).min(1).max(200).optional().meta({
      description: 'Shown when the answer is one of these (a multiselect: when any of them is chosen)',
    }),
    answered: z.literal(true).optional().meta({ description: 'Shown once the earlier item has any answer' }),
  })
  .meta({
    id: 'ShowIf',
    description:
      'Show the item only when an earlier answer makes it apply; give exactly one of equals, in, answered. A hidden item is not asked, not needed for completion, not counted, not chased and absent from results.',
    examples: [{ item_key: 'has_logo', equals: true }],
  });
export type ShowIf = z.infer<typeof ShowIf>;

/** What the rules read of an item's definition. */
export interface ConditionalDefinition {
  key: string;
  type: string;
  options?: readonly { value: string }[] | undefined;
  show_if?: ShowIf | undefined;
}

/** An item in the request's order, with its current answer (saved or sent; undefined when none). */
export interface AnsweredItem {
  key: string;
  show_if?: ShowIf | undefined;
  value: unknown;
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === 'string') return value.trim() === '';
  if (Array.isArray(value)) return value.length === 0;
  return false;
}

/** Whether an answer satisfies a condition. */
export function conditionHolds(condition: ShowIf, value: unknown): boolean {
  if (isEmpty(value)) return false;
  if (condition.answered) return true;
  const answers: unknown[] = Array.isArray(value)
    ? value
    : [typeof value === 'string' ? value.trim() : value];
  if (condition.equals !== undefined) return answers.includes(condition.equals);
  if (condition.in !== undefined)
    return answers.some((a) => typeof a === 'string' && condition.in?.includes(a));
  return true;
}

/**
 * The keys of the items that apply, in order. An item applies when it has no condition, or when the
 * item it depends on applies and its answer satisfies the condition (so hiding a question hides what
 * depends on it). A condition naming no earlier item (refused when defined) never hides anything.
 */
export function applicableKeys(items: readonly AnsweredItem[]): Set<string> {
  const applies = new Set<string>();
  const seen = new Map<string, AnsweredItem>();
  for (const item of items) {
    const condition = item.show_if;
    const source = condition ? seen.get(condition.item_key) : undefined;
    if (!condition || !source) applies.add(item.key);
    else if (applies.has(source.key) && conditionHolds(condition, source.value)) applies.add(item.key);
    seen.set(item.key, item);
  }
  return applies;
}

/** Items grouped by section: consecutive items with the same section form one group. */
export interface SectionGroup<T> {
  section: string | null;
  items: T[];
}

export function sectionGroups<T extends { section?: string | null | undefined }>(
  items: readonly T[],
): SectionGroup<T>[] {
  const groups: SectionGroup<T>[] = [];
  for (const item of items) {
    const section = item.section ?? null;
    const last = groups.at(-1);
    if (last && last.section === section) last.items.push(item);
    else groups.push({ section, items: [item] });
  }
  return groups;
}

/** A problem with one item's condition, named like the other definition problems. */
export interface ConditionProblem {
  item: string;
  field: string;
  message: string;
}

/** The chain of conditions starting at `key`, as far as it goes; true when it comes back to `key`. */
function inCycle(key: string, dependsOn: ReadonlyMap<string, string>): boolean {
  const visited = new Set<string>();
  let at = dependsOn.get(key);
  while (at !== undefined && !visited.has(at)) {
    if (at === key) return true;
    visited.add(at);
    at = dependsOn.get(at);
  }
  return false;
}

/**
 * Everything wrong with the conditions of a request's items (the whole list, in order): exactly one
 * test per condition, a known item, no cycle, an earlier item, a kind that has an answer to test,
 * and a value that item can have.
 */
export function conditionProblems(items: readonly ConditionalDefinition[]): ConditionProblem[] {
  const problems: ConditionProblem[] = [];
  const position = new Map(items.map((item, i) => [item.key, i]));
  const dependsOn = new Map<string, string>();
  for (const item of items) if (item.show_if) dependsOn.set(item.key, item.show_if.item_key);
  items.forEach((item, index) => {
    const condition = item.show_if;
    if (!condition) return;
    const at = (field: string, message: string) =>
      problems.push({ item: item.key, field: `show_if.${field}`, message });
    const tests = [condition.equals !== undefined, condition.in !== undefined, condition.answered === true];
    if (tests.filter(Boolean).length !== 1) {
      at('equals', 'give exactly one of equals, in or answered');
      return;
    }
    const target = condition.item_key;
    const targetAt = position.get(target);
    if (targetAt === undefined) {
      at('item_key', `refers to unknown item "${target}"`);
      return;
    }
    if (target === item.key || inCycle(item.key, dependsOn)) {
      at('item_key', `"${target}" leads back to "${item.key}": conditions form a cycle`);
      return;
    }
    if (targetAt > index) {
      at('item_key', `refers to "${target}", which comes later: a condition depends on an earlier item`);
      return;
    }
    const source = items[targetAt];
    if (!source) return;
    if (!(CONDITION_SOURCE_TYPES as readonly string[]).includes(source.type)) {
      at(
        'item_key',
        `"${target}" is a ${source.type} item; conditions test ${CONDITION_SOURCE_TYPES.join(', ')} items`,
      );
      return;
    }
    problems.push(...valueProblems(item.key, condition, source));
  });
  return problems;
}

function valueProblems(key: string, condition: ShowIf, source: ConditionalDefinition): ConditionProblem[] {
  const problem = (field: string, message: string) => ({ item: key, field: `show_if.${field}`, message });
  const values = condition.equals !== undefined ? [condition.equals] : (condition.in ?? []);
  const field = condition.equals !== undefined ? 'equals' : 'in';
  if (values.length === 0) return [];
  if (source.type === 'boolean') {
    if (field === 'in' || values.some((v) => typeof v !== 'boolean')) {
      return [problem(field, `"${source.key}" is a yes/no item: use equals: true or equals: false`)];
    }
    return [];
  }
  if (values.some((v) => typeof v !== 'string')) {
    return [problem(field, `"${source.key}" is a ${source.type} item: compare it with text`)];
  }
  if (source.type === 'select' || source.type === 'multiselect') {
    const options = new Set((source.options ?? []).map((o) => o.value));
    const unknown = values.filter((v) => typeof v === 'string' && !options.has(v));
    if (unknown.length > 0) {
      return [
        problem(field, `"${source.key}" has no option ${unknown.map((v) => `"${String(v)}"`).join(', ')}`),
      ];
    }
  }
  return [];
}
