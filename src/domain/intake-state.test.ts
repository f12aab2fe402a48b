import { describe, expect, it } from 'vitest';
import {
  allRequired,
  archiveTransition,
  AUTO_APPROVE_AFTER_MS,
  derivedIntakeStatus,
  INTAKE_STATUSES,
  intakeAcceptsClientWork,
  intakeAcceptsOwnerChanges,
  itemTransition,
  ITEM_STATUSES,
  progressOf,
  statusAfterClientChange,
  stillNeeded,
  unsentAnswer,
  sendTransition,
  type IntakeStatus,
  type ItemAction,
  type ItemState,
  type ItemStatus,
  type Transition,
} from './intake-state.js';

const move = <S>(next: S, changed: boolean): Transition<S> => ({ ok: true, next, changed });
const refused = <S>(reason: string): Transition<S> => ({ ok: false, code: 'conflict', reason });

/**
 * The whole item state machine: every status × every action. Typed as a complete Record, so adding a
 * status or an action without deciding its outcome here fails to compile.
 */
const ITEM_MACHINE: Record<ItemStatus, Record<ItemAction, Transition<ItemStatus>>> = {
  pending: {
    save: move('pending', false),
    remove_file: move('pending', false),
    submit: move('submitted', true),
    approve: refused('the item is pending: only a submitted item can be approved'),
    auto_approve: refused('the item is pending; auto-approval applies to submitted items only'),
    request_revision: refused('the client has not submitted this item yet: there is nothing to revise'),
  },
  // Not reviewed yet: the client may change it and send it again (a new submission).
  submitted: {
    save: move('submitted', false),
    remove_file: move('submitted', false),
    submit: move('submitted', true),
    approve: move('approved', true),
    auto_approve: move('approved', true),
    request_revision: move('needs_revision', true),
  },
  approved: {
    save: refused('this item is approved and can no longer be changed'),
    remove_file: refused('this item is approved and can no longer be changed'),
    submit: refused('this item is already approved and can no longer be changed'),
    approve: move('approved', false),
    auto_approve: refused('the item is approved; auto-approval applies to submitted items only'),
    request_revision: move('needs_revision', true),
  },
  needs_revision: {
    save: move('needs_revision', false),
    remove_file: move('needs_revision', false),
    submit: move('submitted', true),
    approve: refused('the item is needs_revision: only a submitted item can be approved'),
    auto_approve: refused('the item is needs_revision; auto-approval applies to submitted items only'),
    request_revision: move('needs_revision', true),
  },
};

const ACTIONS: readonly ItemAction[] = [
  'save',
  'submit',
  'approve',
  'auto_approve',
  'request_revision',
  'remove_file',
];

const itemCases = ITEM_STATUSES.flatMap((status) =>
  ACTIONS.map((action) => ({ status, action, expected: ITEM_MACHINE[status][action] })),
);

describe('itemTransition: every status × action', () => {
  it('the table covers every status and action', () => {
    expect(Object.keys(ITEM_MACHINE).sort()).toEqual([...ITEM_STATUSES].sort());
    for (const status of ITEM_STATUSES)
      expect(Object.keys(ITEM_MACHINE[status]).sort()).toEqual([...ACTIONS].sort());
    expect(itemCases).toHaveLength(24);
  });

  it.each(itemCases)('$status + $action', ({ status, action, expected }) => {
    expect(itemTransition(status, action)).toEqual(expected);
  });

  it('never moves an item into pending, and only submit moves one into submitted', () => {
    for (const { expected, action } of itemCases) {
      if (!expected.ok || !expected.changed) continue;
      expect(expected.next).not.toBe('pending');
      if (expected.next === 'submitted') expect(action).toBe('submit');
    }
  });
});

interface IntakeRow {
  send: Transition<IntakeStatus>;
  archive: Transition<IntakeStatus>;
  clientWork: Transition<IntakeStatus>;
  ownerChanges: Transition<IntakeStatus>;
}

const INTAKE_MACHINE: Record<IntakeStatus, IntakeRow> = {
  draft: {
    send: move('sent', true),
    archive: move('archived', true),
    clientWork: refused('the intake has not been sent yet'),
    ownerChanges: move('draft', false),
  },
  sent: {
    send: refused('only a draft intake can be sent; this one is sent'),
    archive: move('archived', true),
    clientWork: move('sent', false),
    ownerChanges: move('sent', false),
  },
  in_progress: {
    send: refused('only a draft intake can be sent; this one is in_progress'),
    archive: move('archived', true),
    clientWork: move('in_progress', false),
    ownerChanges: move('in_progress', false),
  },
  completed: {
    send: refused('only a draft intake can be sent; this one is completed'),
    archive: move('archived', true),
    clientWork: move('completed', false),
    ownerChanges: move('completed', false),
  },
  archived: {
    send: refused('only a draft intake can be sent; this one is archived'),
    archive: move('archived', false),
    clientWork: refused('the intake is archived'),
    ownerChanges: refused('the intake is archived'),
  },
};

describe('intake transitions: every intake status', () => {
  it('the table covers every intake status', () => {
    expect(Object.keys(INTAKE_MACHINE).sort()).toEqual([...INTAKE_STATUSES].sort());
  });

  it.each(INTAKE_STATUSES)('%s', (status) => {
    const row = INTAKE_MACHINE[status];
    expect(sendTransition(status)).toEqual(row.send);
    expect(archiveTransition(status)).toEqual(row.archive);
    expect(intakeAcceptsClientWork(status)).toEqual(row.clientWork);
    expect(intakeAcceptsOwnerChanges(status)).toEqual(row.ownerChanges);
  });
});

const item = (status: ItemStatus, required = true, clientFacing?: boolean): ItemState =>
  clientFacing === undefined ? { status, required } : { status, required, clientFacing };

describe('derivedIntakeStatus', () => {
  const allApproved = [item('approved'), item('approved')];

  it.each(['draft', 'archived'] as const)('%s keeps its status whatever the items', (status) => {
    expect(derivedIntakeStatus(status, allApproved, true)).toBe(status);
    expect(derivedIntakeStatus(status, [item('pending')], true)).toBe(status);
    expect(derivedIntakeStatus(status, [], false)).toBe(status);
  });

  it('a sent intake stays sent until the client engages', () => {
    expect(derivedIntakeStatus('sent', [item('pending')], false)).toBe('sent');
    expect(derivedIntakeStatus('sent', [item('submitted')], false)).toBe('sent');
    expect(derivedIntakeStatus('sent', [], false)).toBe('sent');
  });

  it('a sent intake moves to in_progress once the client engages', () => {
    expect(derivedIntakeStatus('sent', [item('pending')], true)).toBe('in_progress');
    expect(derivedIntakeStatus('sent', [item('submitted'), item('pending')], true)).toBe('in_progress');
  });

  it('completes when every required item is approved', () => {
    expect(derivedIntakeStatus('in_progress', allApproved, true)).toBe('completed');
    expect(derivedIntakeStatus('in_progress', allApproved, false)).toBe('completed');
    expect(derivedIntakeStatus('sent', allApproved, true)).toBe('completed');
    expect(derivedIntakeStatus('completed', allApproved, false)).toBe('completed');
    // Completion is checked before engagement: items the owner fills in can complete a sent intake.
    expect(derivedIntakeStatus('sent', allApproved, false)).toBe('completed');
  });

  it('submitted is not enough to complete', () => {
    expect(derivedIntakeStatus('in_progress', [item('approved'), item('submitted')], true)).toBe(
      'in_progress',
    );
  });

  it('optional items do not block completion', () => {
    const items = [item('approved'), item('pending', false), item('needs_revision', false)];
    expect(derivedIntakeStatus('in_progress', items, true)).toBe('completed');
  });

  it('an intake without required items never completes', () => {
    expect(derivedIntakeStatus('in_progress', [item('approved', false)], true)).toBe('in_progress');
    expect(derivedIntakeStatus('in_progress', [], true)).toBe('in_progress');
  });

  it.each(['needs_revision', 'submitted', 'pending'] as const)(
    'a completed intake goes back to in_progress when a required item becomes %s',
    (status) => {
      expect(derivedIntakeStatus('completed', [item('approved'), item(status)], true)).toBe('in_progress');
      expect(derivedIntakeStatus('completed', [item('approved'), item(status)], false)).toBe('in_progress');
    },
  );

  it('a completed intake stays completed when only an optional item leaves approved', () => {
    expect(derivedIntakeStatus('completed', [item('approved'), item('needs_revision', false)], true)).toBe(
      'completed',
    );
  });
});

describe('allRequired', () => {
  it('submitted level counts submitted and approved', () => {
    expect(allRequired([item('submitted'), item('approved')], 'submitted')).toBe(true);
    expect(allRequired([item('submitted'), item('needs_revision')], 'submitted')).toBe(false);
    expect(allRequired([item('submitted'), item('pending')], 'submitted')).toBe(false);
  });

  it('approved level counts approved only', () => {
    expect(allRequired([item('approved'), item('approved')], 'approved')).toBe(true);
    expect(allRequired([item('approved'), item('submitted')], 'approved')).toBe(false);
  });

  it('ignores optional items', () => {
    expect(allRequired([item('approved'), item('pending', false)], 'approved')).toBe(true);
    expect(allRequired([item('submitted'), item('pending', false)], 'submitted')).toBe(true);
  });

  it('is false when nothing is required', () => {
    expect(allRequired([], 'submitted')).toBe(false);
    expect(allRequired([item('approved', false)], 'approved')).toBe(false);
  });
});

describe('progressOf', () => {
  it('counts submitted and approved as submitted, and rounds the percent', () => {
    expect(progressOf([item('submitted'), item('pending'), item('needs_revision')])).toEqual({
      submitted: 1,
      total: 3,
      outstanding: 2,
      percent: 33,
      awaiting_review: 1,
    });
    expect(progressOf([item('submitted'), item('approved'), item('pending')])).toEqual({
      submitted: 2,
      total: 3,
      outstanding: 1,
      percent: 67,
      awaiting_review: 1,
    });
    expect(progressOf([item('approved'), item('pending', false)])).toEqual({
      submitted: 1,
      total: 2,
      outstanding: 1,
      percent: 50,
      awaiting_review: 0,
    });
  });

  it('rounds half up (1 of 8 → 13)', () => {
    const items = [item('submitted'), ...Array.from({ length: 7 }, () => item('pending'))];
    expect(progressOf(items).percent).toBe(13);
  });

  it('counts optional items (client-facing) too', () => {
    expect(progressOf([item('pending', false), item('submitted', false)])).toEqual({
      submitted: 1,
      total: 2,
      outstanding: 1,
      percent: 50,
      awaiting_review: 1,
    });
  });

  it('excludes items with clientFacing false, includes clientFacing true and unset', () => {
    expect(
      progressOf([
        item('approved', true, false),
        item('pending', true, false),
        item('submitted', true, true),
        item('pending'),
      ]),
    ).toEqual({ submitted: 1, total: 2, outstanding: 1, percent: 50, awaiting_review: 1 });
  });

  it('is 0 percent for no items, and 100 when all are in', () => {
    expect(progressOf([])).toEqual({
      submitted: 0,
      total: 0,
      outstanding: 0,
      percent: 0,
      awaiting_review: 0,
    });
    expect(progressOf([item('approved', true, false), item('submitted', true, false)])).toEqual({
      submitted: 0,
      total: 0,
      outstanding: 0,
      percent: 0,
      awaiting_review: 0,
    });
    expect(progressOf([item('approved'), item('submitted')]).percent).toBe(100);
  });
});

describe('AUTO_APPROVE_AFTER_MS', () => {
  it('is 72 hours', () => {
    expect(AUTO_APPROVE_AFTER_MS).toBe(259_200_000);
  });
});

describe('unsentAnswer', () => {
  const at = (status: ItemStatus, saved: string | null, submitted: string | null, hasContent = true) =>
    unsentAnswer({ status, hasContent, saved_at: saved, submitted_at: submitted });
  const t1 = '2026-05-01T10:00:00.000Z';
  const t2 = '2026-05-01T11:00:00.000Z';

  it('an open item with something saved is unsent; one with nothing is not', () => {
    expect(at('pending', t1, null)).toBe(true);
    expect(at('pending', t1, null, false)).toBe(false);
  });

  it('a change saved after the last submission is unsent, until sent again', () => {
    expect(at('submitted', t1, t1)).toBe(false);
    expect(at('submitted', t2, t1)).toBe(true);
    expect(at('needs_revision', t1, t1)).toBe(false);
    expect(at('needs_revision', t2, t1)).toBe(true);
  });

  it('an approved item has nothing to send', () => {
    expect(at('approved', t2, t1)).toBe(false);
  });
});

describe('stillNeeded', () => {
  it('required items not sent, and items sent back for changes', () => {
    expect(stillNeeded(true, 'pending')).toBe(true);
    expect(stillNeeded(false, 'pending')).toBe(false);
    expect(stillNeeded(false, 'needs_revision')).toBe(true);
    expect(stillNeeded(true, 'submitted')).toBe(false);
    expect(stillNeeded(true, 'approved')).toBe(false);
  });
});

describe('statusAfterClientChange', () => {
  it('a submission the client empties again is open again; anything else keeps its status', () => {
    expect(statusAfterClientChange('submitted', false)).toBe('pending');
    expect(statusAfterClientChange('submitted', true)).toBe('submitted');
    expect(statusAfterClientChange('needs_revision', false)).toBe('needs_revision');
    expect(statusAfterClientChange('pending', false)).toBe('pending');
  });
});
