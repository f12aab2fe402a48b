import type { z } from 'zod';
import type { IntakeStatus, ItemStatus } from '../../domain/intake-state.js';
import { progressOf } from '../../domain/intake-state.js';
import { definitionOf, type IntakeRow, type ItemRow } from './intakes.repository.js';
import type { CreatedIntake, Intake, IntakeItem, IntakeStatusObject } from './intakes.schemas.js';
import { itemStates } from './intakes.lifecycle.js';

export function portalUrl(appUrl: string, intakeId: string): string {
  return `${appUrl}/portal/${intakeId}`;
}

export function toCreatedIntake(
  appUrl: string,
  intake: IntakeRow,
  items: ItemRow[],
): z.infer<typeof CreatedIntake> {
  return {
    intake_id: intake.id,
    portal_url: portalUrl(appUrl, intake.id),
    status: intake.status as IntakeStatus,
    items: items.map((i) => ({ key: i.key, status: i.status as ItemStatus })),
  };
}

/** An item's definition and review state as both the caller and the client see them. */
export function itemBasics(row: ItemRow) {
  const def = definitionOf(row);
  return {
    key: row.key,
    label: def.label,
    help: def.help ?? null,
    type: def.type,
    required: def.required,
    constraints: def.constraints,
    schema: def.schema ?? null,
    options: def.options ?? null,
    status: row.status as ItemStatus,
    revision_note: row.status === 'needs_revision' ? row.revision_note : null,
  };
}

export function toIntakeItem(row: ItemRow): z.infer<typeof IntakeItem> {
  return {
    ...itemBasics(row),
    submitted_at: row.submitted_at,
    approved_at: row.approved_at,
  };
}

export function toIntake(appUrl: string, intake: IntakeRow, items: ItemRow[]): z.infer<typeof Intake> {
  return {
    id: intake.id,
    project_name: intake.project_name,
    client: {
      email: intake.client_email,
      name: intake.client_name,
      language: intake.client_language,
      phone: intake.client_phone,
      timezone: intake.client_timezone,
    },
    status: intake.status as IntakeStatus,
    portal_url: portalUrl(appUrl, intake.id),
    chase_schedule: intake.chase_schedule,
    due_date: intake.due_date,
    retention: {
      mode: intake.retention_mode,
      days: intake.retention_days,
      anonymize: intake.retention_anonymize === 1,
    },
    template_id: intake.template_id,
    client_brief: intake.client_brief,
    items: items.map(toIntakeItem),
    livemode: intake.livemode === 1,
    created_at: intake.created_at,
    updated_at: intake.updated_at,
    sent_at: intake.sent_at,
    completed_at: intake.completed_at,
    archived_at: intake.archived_at,
    client_last_seen: intake.client_last_seen_at,
  };
}

export function toStatusObject(
  intake: IntakeRow,
  items: ItemRow[],
  chases: z.infer<typeof IntakeStatusObject>['chases'] = [],
): z.infer<typeof IntakeStatusObject> {
  return {
    status: intake.status as IntakeStatus,
    due_date: intake.due_date,
    client_last_seen: intake.client_last_seen_at,
    progress: progressOf(itemStates(items)),
    items: items.map((row) => ({
      key: row.key,
      status: row.status as ItemStatus,
      submitted_at: row.submitted_at,
      label: definitionOf(row).label,
    })),
    // CONTRACT: every chase sent, bounced, failed or cancelled, plus the next scheduled one.
    chases,
  };
}
