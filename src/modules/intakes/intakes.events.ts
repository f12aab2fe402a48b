/**
 * What the intakes module tells the rest of the service (domain events, raised in the change's
 * transaction), and what it asks of the modules above it. The composition root wires who answers.
 */
import type { z } from 'zod';
import type { World } from '../../kernel/world.js';
import type { AppServices } from '../../services.js';
import type { ChasePlanValues, ChaseSettingsInput } from './chase-settings.js';
import type { IntakeRow, ItemRow } from './intakes.repository.js';
import type { AlsoNotify, Recipient } from './people.schemas.js';
import type { IntakeStatusObject } from './intakes.schemas.js';

/** A message the client (and everyone notified with them) is sent about a change to their intake. */
export type ClientNotice = 'items_added' | 'revision';

declare module '../../kernel/domain-events.js' {
  interface DomainEventMap {
    /**
     * A new intake and its items (`items`, as written) are written, sent or draft. One created sent
     * is on its way with this event alone: intakeSent is not raised for it.
     */
    intakeCreated: {
      world: World;
      intake: IntakeRow;
      items: readonly ItemRow[];
      chasePlan: ChasePlanValues;
      alsoNotify: z.infer<typeof AlsoNotify>;
    };
    /** A draft went out to its client (POST …/send). */
    intakeSent: { world: World; intake: IntakeRow };
    /** The intake's items changed and it settled into `intake.status` (from `previousStatus`). */
    intakeSettled: { world: World; intake: IntakeRow; items: readonly ItemRow[]; previousStatus: string };
    intakeArchived: { world: World; intakeId: string };
    /** The intake's rows are about to be deleted: whatever hangs off it goes too. */
    intakeDeleted: { world: World; intakeId: string };
    /** Retention removed the client's answers and files: what else holds their content goes too. */
    intakePurged: { world: World; intakeId: string };
    /** Retention anonymised the client's identity: copies of it elsewhere go too. */
    intakeAnonymized: { world: World; intakeId: string; anonymize: (email: string) => string };
    /** Chase settings, the due date or the client's time zone changed (the row carries the new values). */
    intakeScheduleChanged: {
      world: World;
      intake: IntakeRow;
      chaseInput: ChaseSettingsInput;
      planId: string;
    };
    /** Work queued by a committed change may be done now (messages sent promptly); after the commit. */
    intakeChangeCommitted: { services: AppServices; world: World; intakeId: string };
  }

  interface DomainQueryMap {
    /** Queues a notice to the client; whether one was queued (false when nobody can be reached). */
    notifyClient: {
      input: { world: World; intake: IntakeRow; notice: ClientNotice; data: Record<string, unknown> };
      output: boolean;
    };
    /** Everyone notified (the client first), as the intake shows them. */
    intakeRecipients: { input: { world: World; intake: IntakeRow }; output: z.infer<typeof Recipient>[] };
    /** The intake's reminders and recipients, for its status object. */
    intakeReminders: {
      input: { world: World; intake: IntakeRow };
      output: {
        chases: z.infer<typeof IntakeStatusObject>['chases'];
        recipients: z.infer<typeof Recipient>[];
      };
    };
    /** The chase settings stored for the intake, as the request fields that would set them. */
    intakeChaseSettings: { input: { intakeId: string }; output: ChaseSettingsInput };
  }
}
