import { z } from 'zod';
import { ChaseBody } from '../chases/chases.schemas.js';
import { IdempotencyHeaders } from '../intakes/intakes.routes.js';
import { Recipient, RecipientInput } from '../intakes/people.schemas.js';
import {
  AddItemsBody,
  ApprovalResult,
  ApproveBody,
  ApproveItemsBody,
  ApprovedItems,
  ChaseRecord,
  CreateIntakeBody,
  CreatedIntake,
  Intake,
  IntakeItemParams,
  IntakeList,
  IntakeListQuery,
  IntakeParams,
  IntakeStatusObject,
  ItemsAdded,
  Results,
  ResultsQuery,
  RevisionBody,
  RevisionResult,
} from '../intakes/intakes.schemas.js';
import {
  CreateTemplateBody,
  Template,
  TemplateList,
  TemplateListQuery,
  TemplateParams,
} from '../templates/templates.schemas.js';
import { Outbox, OutboxQuery } from '../notify/notify.routes.js';
import { SimulateBody } from '../testmode/simulate.routes.js';
import { AdvanceClockBody, ClockAdvanced } from '../testmode/testmode.routes.js';
import { DESTRUCTIVE, INTERNAL_WRITE, READ_ONLY, REACHES_CLIENT } from './mcp.annotations.js';
import { defineTool, type ToolSpec } from './mcp.executor.js';
import { EDITING_TOOLS, followUpSummary } from './mcp.tools.editing.js';
import { WEBHOOK_TOOLS } from './mcp.tools.webhooks.js';
import { COMMENT_TOOLS } from './mcp.tools.comments.js';
import { ID_ALIAS, POLLING, emailsClient } from './mcp.guidance.js';
import { byStatus, listed, resultsSummary, statusSummary, whereEmailsGo } from './mcp.summaries.js';

/*
 * The agent tools: one declarative table, one REST endpoint per tool. Every argument schema is
 * built from the route's own schemas (path parameters under their REST names plus the route's body
 * or query), and every output schema is the route's response schema, so nothing is written twice.
 */

const intakeId = IntakeParams.shape.id.describe(
  `The intake's id, from define_intake or list_intakes. ${ID_ALIAS}`,
);
const itemKey = IntakeItemParams.shape.key.describe('The item key within the intake, e.g. logo.');
const templateId = TemplateParams.shape.id.describe(
  'The template id (tmpl_…), from list_templates or create_template.',
);

/** The object inside an action's optional body schema (such endpoints also accept no body at all). */
function bodyObject(schema: z.ZodType): z.ZodObject {
  let inner: z.ZodType = schema;
  while (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable)
    inner = inner.unwrap() as z.ZodType;
  if (!(inner instanceof z.ZodObject)) throw new Error('An agent tool body must be an object schema');
  return inner;
}

/** A query-string flag of the route ("true"/"false" on the wire), taken as a JSON boolean by the tool. */
function queryFlag(flag: z.ZodType) {
  const tool = z.boolean().optional();
  return flag.description ? tool.describe(flag.description) : tool;
}

const idempotencyHeader = IdempotencyHeaders.shape['idempotency-key'];

export const TOOLS: readonly ToolSpec[] = [
  defineTool({
    name: 'define_intake',
    title: 'Define an intake',
    description: [
      'Create an intake: a project name, the client contact and the items the client must supply (files, images, texts, structured answers, credentials), or a template_id instead of items.',
      `Unless send is false (a draft, nothing sent), the client is sent the portal link at once. ${emailsClient('the portal link, and scheduled reminders follow (chase_schedule)')}`,
      'Safe to retry: without an idempotency_key the tool derives one from your API key and the canonical arguments, kept 24 hours, so an identical call repeated within a day (a retry after a time-out) returns the first intake instead of creating and emailing a second one. To create two identical intakes on purpose, pass a distinct idempotency_key (a fresh UUID) for each; reuse that key when retrying. The same key with different arguments is a conflict error.',
      'Then follow progress with get_intake_status (or, better, webhooks) and collect answers with get_intake_results.',
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/intakes',
    input: CreateIntakeBody.extend({
      idempotency_key: idempotencyHeader.describe(
        `Sent as the Idempotency-Key header. ${idempotencyHeader.description ?? ''} 1 to 255 visible ASCII characters.`,
      ),
    }),
    headers: { idempotency_key: 'Idempotency-Key' },
    derivedIdempotencyKey: 'idempotency_key',
    output: CreatedIntake,
    annotations: REACHES_CLIENT,
    summarize: (r, { status, livemode, args }) => {
      const items = `${r.items.length} item${r.items.length === 1 ? '' : 's'}`;
      if (status === 200) {
        const why =
          args.idempotency_key === undefined || args.idempotency_key === null
            ? 'an identical define_intake call in the last 24 hours already created it (pass a new idempotency_key to create a second one on purpose)'
            : 'it already existed for this idempotency_key';
        return `Intake ${r.intake_id}: ${why}. Nothing new was created or sent. Status ${r.status}; portal link ${r.portal_url}.`;
      }
      if (r.status === 'draft') {
        return `Draft intake ${r.intake_id} created with ${items}; nothing was sent. Call send_intake to send the client the portal link ${r.portal_url}.`;
      }
      return `Intake ${r.intake_id} created with ${items}, status ${r.status}; portal link ${r.portal_url}. ${whereEmailsGo(livemode)}${followUpSummary(r.follow_up)}`;
    },
  }),
  defineTool({
    name: 'get_intake_status',
    title: 'Progress of an intake',
    description: [
      'Check how far the client is: intake status, progress (submitted, total, outstanding, percent), each item with its status (pending, submitted, approved, needs_revision) and the reminders sent or scheduled. It carries no answers or files: use get_intake_results for those.',
      POLLING,
    ].join('\n\n'),
    method: 'GET',
    path: '/v1/intakes/:intake_id/status',
    input: z.strictObject({ intake_id: intakeId }),
    output: IntakeStatusObject,
    annotations: READ_ONLY,
    summarize: (r, { args }) => statusSummary(args.intake_id, r),
  }),
  defineTool({
    name: 'get_intake_results',
    title: 'Collect the answers',
    description: [
      "NOT read-only: a call moves the intake's results cursor, shows each secret only once, and with retention on_delivery starts the purge of the intake's contents about 24 hours later. Read the client's typed answers: approved items by default, also submitted ones with include_pending. A value is a string (text kinds), an object (structured) or {files: [...]} whose signed download URLs are valid for 24 hours: download promptly, do not store the URLs. Each item carries its conversation (comments, oldest first, actor saying who wrote on your side): answer a client's question with comment_on_item.",
      "Every call moves the intake's results cursor; only_new returns just the items approved since the previous call, which is the way to collect incrementally. Secret items show their value once, to a key with the secrets:read scope, and once more after the client resubmits; otherwise value is null and withheld says why (secrets:read: the key lacks the scope; revealed: shown already, at revealed_at).",
      POLLING,
    ].join('\n\n'),
    method: 'GET',
    path: '/v1/intakes/:intake_id/results',
    input: z.strictObject({
      intake_id: intakeId,
      only_new: queryFlag(ResultsQuery.shape.only_new),
      include_pending: queryFlag(ResultsQuery.shape.include_pending),
    }),
    output: Results,
    // Not read-only: each call moves the only_new cursor, shows a secret once (then never again) and,
    // with retention on_delivery, starts the purge of the intake's contents.
    annotations: DESTRUCTIVE,
    summarize: (r) => resultsSummary(r),
  }),
  defineTool({
    name: 'request_revision',
    title: 'Ask for a revision',
    description: [
      "Send a submitted (or approved) item back to the client with a note saying what to change; the item becomes needs_revision until the client resubmits. Write the note to the client, in the client's language, plainly and specifically (e.g. 'The logo must be at least 1000 px wide, with a transparent background').",
      emailsClient('that the item needs another look, with your note'),
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/intakes/:intake_id/revision',
    input: z.strictObject({ intake_id: intakeId, ...RevisionBody.shape }),
    output: RevisionResult,
    annotations: REACHES_CLIENT,
    summarize: (r, { livemode }) =>
      `Item ${r.item_key} of ${r.intake_id} is now needs_revision; ${
        r.client_notified
          ? livemode
            ? 'the client is being notified.'
            : 'test mode: the notification went to the test outbox.'
          : 'the client was not notified.'
      }`,
  }),
  defineTool({
    name: 'send_chase',
    title: 'Chase the client now',
    description: [
      "Send the client a reminder now, outside the intake's reminder schedule, when the client is slow and a deadline is near. Scheduled reminders already go out by themselves: do not chase more than once a day or so.",
      'channel email (default) or sms; use sms to escalate after email bounces (intake.stalled or chase.bounced webhook). sms needs client.phone and a plan with SMS. Refused (conflict) for a draft, completed or archived intake, or when the client owes nothing.',
      emailsClient('(or texts them)'),
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/intakes/:intake_id/chase',
    input: z.strictObject({ intake_id: intakeId, ...bodyObject(ChaseBody).shape }),
    output: ChaseRecord,
    annotations: REACHES_CLIENT,
    summarize: (r, { args, livemode }) =>
      `Chase ${r.chase_id} (attempt ${r.attempt_no}) for ${String(args.intake_id)} by ${r.channel}: ${r.status}.${
        livemode ? '' : ' Test mode: nothing reached the client (email in the test outbox; SMS dropped).'
      }`,
  }),
  defineTool({
    name: 'list_intakes',
    title: 'List intakes',
    description:
      'List intakes, newest first, optionally filtered by status or client_email, or with awaiting_review true to find the ones whose submitted answers wait for review; paged with limit (default 20, at most 100) and starting_after (the last intake_id of the previous page, while has_more is true) or offset. Records are short (intake_id, projectName, clientEmail, status, createdAt, portal_url, awaiting_review: submitted items not yet reviewed); use get_intake for one in full.',
    method: 'GET',
    path: '/v1/intakes',
    input: IntakeListQuery.extend({ awaiting_review: queryFlag(IntakeListQuery.shape.awaiting_review) }),
    output: IntakeList,
    annotations: READ_ONLY,
    summarize: (r) =>
      r.intakes.length === 0
        ? `No intakes found (total ${r.total}).`
        : `${r.intakes.length} of ${r.total} intakes: ${listed(
            r.intakes.map((i) => `${i.intake_id} "${i.projectName}" (${i.status})`),
          )}.${r.has_more ? ` More follow: starting_after=${r.intakes.at(-1)?.intake_id ?? ''}.` : ''}`,
  }),
  defineTool({
    name: 'get_intake',
    title: 'Get an intake',
    description:
      "The full definition of an intake: project, client, settings, every item with its type, constraints, status and revision note. For progress alone get_intake_status is lighter; for the client's answers use get_intake_results.",
    method: 'GET',
    path: '/v1/intakes/:intake_id',
    input: z.strictObject({ intake_id: intakeId }),
    output: Intake,
    annotations: READ_ONLY,
    summarize: (r) =>
      `Intake ${r.intake_id} "${r.project_name}" for ${r.client.email}: ${r.status}, ${r.items.length} items (${byStatus(r.items)}); portal link ${r.portal_url}.`,
  }),
  defineTool({
    name: 'add_items',
    title: 'Add items to an intake',
    description: [
      'Ask the client for more: add item definitions to an existing intake (keys must be new). The items start as pending.',
      emailsClient('that more is needed'),
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/intakes/:intake_id/items',
    input: z.strictObject({ intake_id: intakeId, ...AddItemsBody.shape }),
    output: ItemsAdded,
    annotations: REACHES_CLIENT,
    summarize: (r, { livemode }) =>
      `Added ${listed(r.items_added.map((i) => i.key))} to ${r.intake_id} (pending). ${whereEmailsGo(livemode)}`,
  }),
  defineTool({
    name: 'approve_item',
    title: 'Approve an item',
    description:
      'Accept a submitted item after checking it (get_intake_results with include_pending shows it). Approved items appear in get_intake_results; the intake completes when every required item is approved. Submitted items are also approved automatically 72 hours after submission.',
    method: 'POST',
    path: '/v1/intakes/:intake_id/items/:item_key/approve',
    input: z.strictObject({ intake_id: intakeId, item_key: itemKey, ...bodyObject(ApproveBody).shape }),
    output: ApprovalResult,
    annotations: { ...INTERNAL_WRITE, idempotentHint: true },
    summarize: (r) => `Item ${r.item_key} of ${r.intake_id} approved.`,
  }),
  defineTool({
    name: 'approve_items',
    title: 'Approve all submitted items',
    description:
      'Accept every submitted item of an intake in one step (or only item_keys), after checking them with get_intake_results include_pending. Items already approved are left as they are, so a retry is safe. The intake completes when every required item is approved.',
    method: 'POST',
    path: '/v1/intakes/:intake_id/approve',
    input: z.strictObject({ intake_id: intakeId, ...bodyObject(ApproveItemsBody).shape }),
    output: ApprovedItems,
    annotations: { ...INTERNAL_WRITE, idempotentHint: true },
    summarize: (r) =>
      r.approved.length === 0
        ? `Nothing new to approve in ${r.intake_id} (${r.status}).`
        : `Approved ${listed(r.approved)} in ${r.intake_id}; the intake is ${r.status}.`,
  }),
  defineTool({
    name: 'send_intake',
    title: 'Send a draft intake',
    description: [
      'Send a draft intake (created with send: false) to the client; only a draft can be sent (conflict otherwise).',
      emailsClient('the portal link, and scheduled reminders start'),
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/intakes/:intake_id/send',
    input: z.strictObject({ intake_id: intakeId }),
    output: Intake,
    annotations: REACHES_CLIENT,
    summarize: (r, { livemode }) =>
      `Intake ${r.intake_id} sent (status ${r.status}); portal link ${r.portal_url}. ${whereEmailsGo(livemode)}`,
  }),
  defineTool({
    name: 'archive_intake',
    title: 'Archive an intake',
    description:
      'Close an intake that is no longer needed: reminders stop and the client portal answers "gone", so the client can no longer submit. The record and its results stay readable. There is no un-archive: confirm with the user first if the client might still be working on it.',
    method: 'POST',
    path: '/v1/intakes/:intake_id/archive',
    input: z.strictObject({ intake_id: intakeId }),
    output: Intake,
    annotations: { ...DESTRUCTIVE, idempotentHint: true },
    summarize: (r) => `Intake ${r.intake_id} is ${r.status}; reminders stopped and the portal is closed.`,
  }),
  defineTool({
    name: 'delete_intake',
    title: 'Delete an intake permanently',
    description:
      'PERMANENTLY and IRREVERSIBLY delete an intake with every answer and uploaded file; nothing can restore it. Use it only when the user explicitly asks to delete this specific intake (for example a data-deletion request). To stop an intake, use archive_intake instead; retention settings purge data automatically.',
    method: 'DELETE',
    path: '/v1/intakes/:intake_id',
    input: z.strictObject({ intake_id: intakeId }),
    annotations: DESTRUCTIVE,
    summarize: (_r, { args }) =>
      `Intake ${String(args.intake_id)} and all its files were permanently deleted.`,
  }),
  defineTool({
    name: 'manage_recipients',
    title: 'Add, remove or reinstate a recipient',
    description: [
      "Besides the client, up to 10 more people can get an intake's emails: each gets the portal link and their own reminders in their own message (nobody sees the other addresses), and can opt out of reminders alone.",
      'action add: POST /v1/intakes/:id/recipients {email, name} (the portal link goes out at once when the intake is sent). action remove: DELETE /v1/intakes/:id/recipients/:email (not the client). action reinstate: POST /v1/intakes/:id/recipients/:email/reinstate, after a wrong bounce: lifts the suppression of the address and resumes their reminders.',
      emailsClient('the portal link to an added person'),
      'get_intake shows every recipient with opt-outs and suppressions.',
    ].join('\n\n'),
    method: 'POST',
    path: '/v1/intakes/:intake_id/recipients',
    choose: {
      argument: 'action',
      routes: {
        add: { method: 'POST', path: '/v1/intakes/:intake_id/recipients' },
        remove: { method: 'DELETE', path: '/v1/intakes/:intake_id/recipients/:email' },
        reinstate: { method: 'POST', path: '/v1/intakes/:intake_id/recipients/:email/reinstate' },
      },
    },
    // remove drops a person from the intake; add emails them.
    annotations: { ...DESTRUCTIVE, openWorldHint: true },
    input: z.strictObject({
      intake_id: intakeId,
      action: z.enum(['add', 'remove', 'reinstate']).describe('What to do with the recipient'),
      email: RecipientInput.shape.email.describe('The person’s email address'),
      name: RecipientInput.shape.name.describe('add only: the name used in their greeting'),
    }),
    summarize: (r, { args, livemode }) => {
      const person = Recipient.safeParse(r);
      const email = String(args.email);
      if (args.action === 'remove')
        return `${email} removed from ${String(args.intake_id)}: nothing more is sent to them.`;
      if (!person.success) return `Recipient ${email}: done.`;
      if (args.action === 'reinstate') {
        return `${person.data.email} reinstated on ${String(args.intake_id)}: no longer suppressed; reminders resume if something is owed.`;
      }
      return `${person.data.email} added to ${String(args.intake_id)}; they get their own emails and reminders. ${whereEmailsGo(livemode)}`;
    },
  }),
  defineTool({
    name: 'list_templates',
    title: 'List templates',
    description:
      'List the saved item lists (templates) of this account, newest first; paged with limit (default 20, at most 100) and starting_after (the last id of the previous page) while has_more is true. Pass a template_id to define_intake instead of items to reuse one.',
    method: 'GET',
    path: '/v1/templates',
    input: TemplateListQuery,
    output: TemplateList,
    annotations: READ_ONLY,
    summarize: (r) =>
      r.templates.length === 0
        ? 'No templates yet.'
        : `${r.templates.length} templates: ${listed(
            r.templates.map((t) => `${t.id} "${t.name}" (${t.items.length} items)`),
          )}.${r.has_more ? ' More with starting_after.' : ''}`,
  }),
  defineTool({
    name: 'get_template',
    title: 'Get a template',
    description:
      'One template with its item definitions: what an intake defined from it (define_intake with template_id) will ask the client for.',
    method: 'GET',
    path: '/v1/templates/:template_id',
    input: z.strictObject({ template_id: templateId }),
    output: Template,
    annotations: READ_ONLY,
    summarize: (r) =>
      `Template ${r.id} "${r.name}": ${listed(r.items.map((i) => i.key))}. Use it with define_intake template_id.`,
  }),
  defineTool({
    name: 'create_template',
    title: 'Create a template',
    description:
      'Save a list of item definitions under a name, to define intakes from it later (define_intake with template_id). Nothing is sent to anyone.',
    method: 'POST',
    path: '/v1/templates',
    input: CreateTemplateBody,
    output: Template,
    annotations: INTERNAL_WRITE,
    summarize: (r) =>
      `Template ${r.id} "${r.name}" created with ${r.items.length} items. Use it with define_intake template_id.`,
  }),
  defineTool({
    name: 'simulate_client',
    title: 'Simulate the client (test keys)',
    description:
      'Test keys (svc_test_…) only: play the client of a test-mode intake. view opens the portal; submit fills every waiting item (or the given item keys) with synthetic answers that satisfy its type and constraints, and submits them; bounce makes the next reminder email hard-bounce. Answers with the intake status, as get_intake_status.',
    method: 'POST',
    path: '/v1/test_helpers/intakes/:intake_id/simulate',
    input: z.strictObject({ intake_id: intakeId, ...SimulateBody.shape }),
    output: IntakeStatusObject,
    // submit replaces the test intake's drafts with synthetic answers.
    annotations: DESTRUCTIVE,
    summarize: (r, { args }) =>
      `Simulated client ${String(args.action)}. ${statusSummary(args.intake_id, r)}`,
  }),
  defineTool({
    name: 'advance_test_clock',
    title: 'Advance the test clock (test keys)',
    description:
      "Test keys (svc_test_…) with the admin scope only: move the account's test clock forward by seconds. When it returns, every reminder, 72-hour auto-approval, retention purge and webhook retry due by the new time has run, so a test can see what a client's slow week looks like in a second.",
    method: 'POST',
    path: '/v1/test_helpers/advance_clock',
    input: AdvanceClockBody,
    output: ClockAdvanced,
    // Due retention purges run too: test intakes past their retention lose their contents.
    annotations: DESTRUCTIVE,
    summarize: (r) =>
      `Test clock advanced ${r.advanced_seconds} s to ${r.test_clock}; ${r.jobs_run} due jobs ran.`,
  }),
  defineTool({
    name: 'get_test_outbox',
    title: 'Read the test outbox (test keys)',
    description:
      "Test keys (svc_test_…) only: every email and SMS the account's test mode produced, newest first (optionally of one intake): what the client would have received (the portal link, reminders, revision requests), with subject, text and HTML. Nothing in test mode reaches a real inbox; this is where to check it.",
    method: 'GET',
    path: '/v1/test_helpers/outbox',
    input: OutboxQuery,
    output: Outbox,
    annotations: READ_ONLY,
    summarize: (r) =>
      r.messages.length === 0
        ? 'The test outbox is empty.'
        : `${r.messages.length} message${r.messages.length === 1 ? '' : 's'}, newest first: ${listed(
            r.messages.map(
              (m) => `${m.channel} to ${m.to}${m.subject ? ` "${m.subject}"` : ''} (${m.status})`,
            ),
            3,
          )}.`,
  }),
  ...WEBHOOK_TOOLS,
  ...EDITING_TOOLS,
  ...COMMENT_TOOLS,
];

export const TOOLS_BY_NAME: ReadonlyMap<string, ToolSpec> = new Map(TOOLS.map((tool) => [tool.name, tool]));
