import { answer, subscribe } from './kernel/domain-events.js';
import {
  callOffRecipient,
  chaseRecords,
  clientReminderState,
  createChasePlan,
  currentChaseInput,
  deleteChaseData,
  inviteRecipient,
  notifyClient,
  onIntakeSent,
  replanChases,
  resumeSeriesOf,
  scheduleOverdueCheck,
  startNewIntake,
  stopChases,
  syncChases,
} from './modules/chases/chases.service.js';
import { planCommentEmail } from './modules/chases/comment-emails.js';
import { conversationOf, deleteCommentsOf } from './modules/comments/comments.service.js';
import { recordEvent } from './modules/events/events.repository.js';
import { existingFileIds, referencedStorageKeys } from './modules/intakes/intakes.service.js';
import {
  deleteNoticesOfIntake,
  recordBouncedEmailNotice,
  recordOwnerNotice,
} from './modules/notices/notices.service.js';
import { deleteMessagesOfIntake, sendQueuedMessages } from './modules/notify/notify.service.js';
import {
  anonymizeRecipients,
  insertAlsoNotify,
  recipientRecords,
  recipientsOf,
} from './modules/recipients/recipients.service.js';
import { fanOutEvent } from './modules/webhooks/webhooks.outbox.js';
import { revokeKeysOfPerson } from './modules/keys/keys.service.js';
import { countActiveGrants } from './modules/oauth/oauth.service.js';
import { endGrantsOfPerson } from './modules/oauth/person-grants.js';
import { seatsUsed } from './modules/sessions/members.service.js';

/**
 * Who hears which domain event, and who answers which question: the one place where a change in one
 * module becomes work in another. Every subscriber runs in the raising transaction, in the order given
 * here. Registered once per process, when this module is first imported (server.ts imports it, so the
 * server, the worker and the CLI all have it).
 */

// Public events: recorded in the outbox, then fanned out to the webhooks that subscribe to them.
subscribe('publicEventEmitted', async (trx, event) => {
  await recordEvent(trx, event);
});
subscribe('publicEventRecorded', async (trx, event) => {
  await fanOutEvent(trx, event);
});
// The account's people are told of answers, milestones and trouble (owner notifications).
subscribe('publicEventRecorded', async (trx, event) => {
  await recordOwnerNotice(trx, event);
});
subscribe('clientEmailBounced', async (trx, bounce) => {
  await recordBouncedEmailNotice(trx, bounce);
});

// An intake's life: its reminder plan, the people notified with the client, and their messages.
subscribe('intakeCreated', async (trx, { world, intake, items, chasePlan, alsoNotify }) => {
  const plan = await createChasePlan(trx, world, intake.id, chasePlan);
  const recipients = await insertAlsoNotify(trx, world, intake.id, alsoNotify);
  // Created sent: the invitations and first reminders, planned from the rows just written.
  if (intake.status === 'sent') await startNewIntake(trx, world, intake, { plan, recipients, items });
  await scheduleOverdueCheck(trx, world, intake, { isNew: true });
});
subscribe('intakeSent', async (trx, { world, intake }) => {
  await onIntakeSent(trx, world, intake);
  await scheduleOverdueCheck(trx, world, intake);
});
subscribe('intakeSettled', async (trx, { world, intake, items, previousStatus }) => {
  await syncChases(trx, world, intake, items, previousStatus);
});
subscribe('intakeScheduleChanged', async (trx, { world, intake, chaseInput, planId }) => {
  await replanChases(trx, world, intake, chaseInput, planId);
});
subscribe('intakeArchived', async (trx, { world, intakeId }) => {
  await stopChases(trx, world, intakeId);
});
subscribe('intakeDeleted', async (trx, { world, intakeId }) => {
  await deleteCommentsOf(trx, world, intakeId);
  await deleteChaseData(trx, intakeId);
  await deleteNoticesOfIntake(trx, world, intakeId);
});
// The conversation on items is the client's content: it goes with the rest when retention purges it.
subscribe('intakePurged', async (trx, { world, intakeId }) => {
  await deleteCommentsOf(trx, world, intakeId);
});
// The owner's comments reach the client in one batched email per intake (opt-out, quiet hours).
subscribe('ownerCommented', async (trx, { world, intake }) => {
  await planCommentEmail(trx, world, intake);
});
subscribe('intakeAnonymized', async (trx, { world, intakeId, anonymize }) => {
  await deleteMessagesOfIntake(trx, intakeId);
  await deleteNoticesOfIntake(trx, world, intakeId);
  await anonymizeRecipients(trx, intakeId, anonymize);
});
subscribe('intakeChangeCommitted', async (_db, { services, world, intakeId }) => {
  await sendQueuedMessages(services, world, intakeId);
});

// The people of an intake: each has their own reminder series.
subscribe('recipientInvited', async (trx, { world, intake, email }) => {
  await inviteRecipient(trx, world, intake, email);
});
subscribe('recipientRemoved', async (trx, { world, intakeId, recipientId }) => {
  await callOffRecipient(trx, world, intakeId, recipientId);
});
subscribe('recipientReinstated', async (trx, { world, intake, email }) => {
  await resumeSeriesOf(trx, world, intake, email);
});
// A person left the account: the keys they made and the grants they approved stop working with them.
subscribe('memberRemoved', async (trx, { accountId, userId, at }) => {
  await revokeKeysOfPerson(trx, accountId, userId, at);
  await endGrantsOfPerson(trx, { accountId, userId, at });
});

answer('seatsUsed', (db, { accountId }) => seatsUsed(db, accountId));
answer('clientReminderState', (db, { intakeId }) => clientReminderState(db, intakeId));

answer('notifyClient', (trx, { world, intake, notice, data }) =>
  notifyClient(trx, world, intake, notice, data),
);
answer('intakeRecipients', (db, { world, intake }) => recipientRecords(db, world, intake));
answer('intakeReminders', async (db, { world, intake }) => {
  const others = await recipientsOf(db, intake.id);
  const [chases, recipients] = await Promise.all([
    chaseRecords(db, intake.id, others),
    recipientRecords(db, world, intake, others),
  ]);
  return { chases, recipients };
});
answer('intakeChaseSettings', (db, { intakeId }) => currentChaseInput(db, intakeId));

// Stored files: the sweep asks which objects rows still refer to (the rows are the intakes module's).
answer('intakeComments', (db, { intake }) => conversationOf(db, intake));
answer('storedFilesReferenced', (db, { storageKeys }) => referencedStorageKeys(db, storageKeys));
answer('storedFilesExisting', (db, { fileIds }) => existingFileIds(db, fileIds));
// The plan's key cap counts agents' OAuth sign-ins too (the grants are the oauth module's).
answer('activeOAuthGrants', (db, { accountId, at }) => countActiveGrants(db, accountId, at));
