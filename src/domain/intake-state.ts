/**
 * The intake and item state machine (SPEC "States and transitions" with CONTRACT's choices),
 * as pure functions. Callers apply the returned state; anything not listed is refused with a reason.
 */
export const INTAKE_STATUSES = ['draft', 'sent', 'in_progress', 'completed', 'archived'] as const;
export type IntakeStatus = (typeof INTAKE_STATUSES)[number];
export const ITEM_STATUSES = ['pending', 'submitted', 'approved', 'needs_revision'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

export type ItemAction = 'save' | 'submit' | 'approve' | 'auto_approve' | 'request_revision' | 'remove_file';

export type Transition<S> =
  { ok: true; next: S; changed: boolean } | { ok: false; code: 'conflict'; reason: string };

const refuse = <S>(reason: string): Transition<S> => ({ ok: false, code: 'conflict', reason });
const to = <S>(next: S, changed = true): Transition<S> => ({ ok: true, next, changed });

/** What an item action does from each item status. */
export function itemTransition(status: ItemStatus, action: ItemAction): Transition<ItemStatus> {
  switch (action) {
    // Until the owner reviews a submission, the client may still change it and send it again.
    case 'save':
    case 'remove_file':
      if (status !== 'approved') return to(status, false);
      return refuse('this item is approved and can no longer be changed');
    case 'submit':
      if (status !== 'approved') return to('submitted');
      return refuse('this item is already approved and can no longer be changed');
    case 'approve':
      if (status === 'submitted') return to('approved');
      if (status === 'approved') return to('approved', false);
      return refuse(`the item is ${status}: only a submitted item can be approved`);
    case 'auto_approve':
      if (status === 'submitted') return to('approved');
      return refuse(`the item is ${status}; auto-approval applies to submitted items only`);
    case 'request_revision':
      if (status === 'submitted' || status === 'approved' || status === 'needs_revision')
        return to('needs_revision');
      return refuse('the client has not submitted this item yet: there is nothing to revise');
  }
}

/** What the portal knows about one item's answer, to tell a sent answer from one still to send. */
export interface AnswerState {
  status: ItemStatus;
  /** A value, a secret or a file is saved (an empty text or list is nothing). */
  hasContent: boolean;
  saved_at: string | null;
  submitted_at: string | null;
}

/**
 * A saved answer the client has not sent: anything saved in an open item, or a change saved after
 * the last submission of an item that waits for review or a revision. An approved item is closed.
 */
export function unsentAnswer(answer: AnswerState): boolean {
  if (!answer.hasContent) return false;
  switch (answer.status) {
    case 'pending':
      return true;
    case 'approved':
      return false;
    case 'submitted':
    case 'needs_revision':
      return (
        answer.saved_at !== null && (answer.submitted_at === null || answer.saved_at > answer.submitted_at)
      );
  }
}

/**
 * The status after the client changed an item's answer. A submission that waits for review and is
 * emptied (its last file removed, its text cleared) is no answer any more: it is open again, so
 * nobody approves nothing. A revision request stays until the client sends again.
 */
export function statusAfterClientChange(status: ItemStatus, hasContent: boolean): ItemStatus {
  return status === 'submitted' && !hasContent ? 'pending' : status;
}

/** Still needed from the client: a required item not sent yet, or any item sent back for changes. */
export function stillNeeded(required: boolean, status: ItemStatus): boolean {
  return status === 'needs_revision' || (required && status === 'pending');
}

/** Whether the caller (account holder) may change the intake's items in this intake status. */
export function intakeAcceptsOwnerChanges(status: IntakeStatus): Transition<IntakeStatus> {
  return status === 'archived' ? refuse('the intake is archived') : to(status, false);
}

/** Whether the client may work in the portal in this intake status. */
export function intakeAcceptsClientWork(status: IntakeStatus): Transition<IntakeStatus> {
  if (status === 'draft') return refuse('the intake has not been sent yet');
  if (status === 'archived') return refuse('the intake is archived');
  return to(status, false);
}

export function sendTransition(status: IntakeStatus): Transition<IntakeStatus> {
  return status === 'draft' ? to('sent') : refuse(`only a draft intake can be sent; this one is ${status}`);
}

export function archiveTransition(status: IntakeStatus): Transition<IntakeStatus> {
  return status === 'archived' ? to('archived', false) : to('archived');
}

export interface ItemState {
  required: boolean;
  status: ItemStatus;
  /** Items the account holder fills in themselves do not count toward the client's progress. */
  clientFacing?: boolean;
}

/**
 * The intake status implied by its items, once the client has engaged: completed when every required
 * item is approved, otherwise in_progress. Draft and archived intakes keep their status; a sent intake
 * stays sent until the client's first save or submission (`clientEngaged`).
 */
export function derivedIntakeStatus(
  current: IntakeStatus,
  items: readonly ItemState[],
  clientEngaged: boolean,
): IntakeStatus {
  if (current === 'draft' || current === 'archived') return current;
  if (allRequired(items, 'approved') && items.some((i) => i.required)) return 'completed';
  if (current === 'sent' && !clientEngaged) return 'sent';
  return 'in_progress';
}

/** Every required item has reached `level` (submitted counts approved too). */
export function allRequired(items: readonly ItemState[], level: 'submitted' | 'approved'): boolean {
  const required = items.filter((i) => i.required);
  if (required.length === 0) return false;
  return required.every((i) =>
    level === 'approved' ? i.status === 'approved' : i.status === 'submitted' || i.status === 'approved',
  );
}

export interface Progress {
  submitted: number;
  total: number;
  outstanding: number;
  percent: number;
  /** Submitted, not yet approved or sent back: what waits for the owner. */
  awaiting_review: number;
}

/** CONTRACT: counts client-facing items; submitted includes approved. */
export function progressOf(items: readonly ItemState[]): Progress {
  const facing = items.filter((i) => i.clientFacing !== false);
  const submitted = facing.filter((i) => i.status === 'submitted' || i.status === 'approved').length;
  const total = facing.length;
  return {
    submitted,
    total,
    outstanding: total - submitted,
    percent: total === 0 ? 0 : Math.round((100 * submitted) / total),
    awaiting_review: facing.filter((i) => i.status === 'submitted').length,
  };
}

/** Auto-approval delay after submission. */
export const AUTO_APPROVE_AFTER_MS = 72 * 60 * 60 * 1000;
