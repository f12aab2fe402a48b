import { isOwnerItem, type ItemDefinition } from './items.js';
import type { DefinitionProblem } from './items.js';
import { checkSubmission } from './values.js';

/**
 * Decisions: items with `assignee: "owner"` are answered by the account holder (a person, in the
 * dashboard), optionally with a value an agent proposed. Pure rules; decisions.service applies them.
 */
export const DECIDED_BY = ['owner', 'agent_proposal'] as const;
export type DecidedBy = (typeof DECIDED_BY)[number];

/** Owner item kinds take neither JSON Schemas nor credentials, so no schema validator is needed. */
const noSchema = () => undefined;

/** A proposal must be a complete, valid answer for its item: it may become the answer as it stands. */
export function proposalProblems(items: readonly ItemDefinition[]): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  for (const item of items) {
    if (!isOwnerItem(item) || item.proposed === undefined) continue;
    const checked = checkSubmission(
      { ...item, required: true },
      { value: item.proposed.value, fileCount: 0 },
      noSchema,
    );
    if (!checked.ok) {
      problems.push({
        item: item.key,
        field: 'proposed.value',
        message: `${checked.constraint}: ${checked.message}`,
      });
    }
  }
  return problems;
}

/** A person's answer to a decision: checked like a client's submission (422 names what is wrong). */
export function checkDecision(
  def: ItemDefinition,
  value: unknown,
): { ok: true } | { ok: false; message: string } {
  if (value === null || value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) {
    return { ok: false, message: 'a decision needs a value' };
  }
  const checked = checkSubmission({ ...def, required: true }, { value, fileCount: 0 }, noSchema);
  return checked.ok ? { ok: true } : { ok: false, message: `${checked.constraint}: ${checked.message}` };
}

/**
 * When an intake completes (every required client item approved), an undecided decision with a
 * proposal takes the proposal as its answer, `decided_by: agent_proposal`; one without a proposal
 * stays undecided (pending, value null) until a person answers it.
 */
export function proposalToAdopt(
  def: ItemDefinition,
  item: { status: string; decided_by: string | null },
): { value: unknown } | undefined {
  if (!isOwnerItem(def) || item.decided_by !== null || item.status !== 'pending') return undefined;
  return def.proposed ? { value: def.proposed.value } : undefined;
}
