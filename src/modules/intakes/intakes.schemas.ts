import { z } from 'zod';
import { INTAKE_STATUSES, ITEM_STATUSES } from '../../domain/intake-state.js';
import { ShowIf } from '../../domain/conditions.js';
import { Comment } from '../../domain/comments.js';
import { DECIDED_BY } from '../../domain/decisions.js';
import {
  ASSIGNEES,
  ItemDefinition,
  ItemJsonSchema,
  ItemOption,
  Constraints,
  Proposal,
} from '../../domain/items.js';
import { LanguageTag, PageLimit, Timestamp, optional } from '../../http/schemas.js';
import { ChaseSettingsFields } from './chase-settings.js';
import { AlsoNotify, Recipient } from './people.schemas.js';

export const CHASE_SCHEDULES = ['default', 'gentle', 'aggressive', 'custom', 'off'] as const;

const E164 = z.string().regex(/^\+[1-9]\d{6,14}$/, 'phone must be in E.164 form, e.g. +14155550123');
export const TimeZone = z.string().refine(
  (zone) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: zone });
      return true;
    } catch {
      return false;
    }
  },
  { message: 'timezone must be an IANA time zone such as Europe/Paris' },
);

export const Country = z
  .string()
  .regex(/^[A-Za-z]{2}$/, 'country must be an ISO 3166-1 alpha-2 code such as DE')
  .transform((code) => code.toUpperCase())
  .meta({
    description:
      'ISO 3166-1 alpha-2: phone numbers the client types without "+" are read as numbers of this country (else the country of client.timezone, else the region of client.language)',
  });

export const ClientInput = z.strictObject({
  email: z.email().max(254),
  name: optional(z.string().trim().min(1).max(200)),
  language: optional(LanguageTag),
  phone: optional(E164),
  timezone: optional(TimeZone),
  country: optional(Country),
});

export const Retention = z
  .strictObject({
    mode: z.enum(['days', 'on_delivery']),
    days: optional(z.number().int().min(1).max(3650)),
    anonymize: optional(z.boolean()),
  })
  .meta({
    id: 'Retention',
    description:
      'days: contents are purged `days` (default 90) after completion. on_delivery: about 24 hours after the results are collected. anonymize: the client identity is replaced and the record kept.',
  });

export const CreateIntakeBody = z
  .strictObject({
    project_name: z.string().trim().min(1).max(200),
    client: ClientInput,
    items: optional(z.array(ItemDefinition).min(1).max(100)),
    template_id: optional(z.string().min(1).max(64)),
    chase_schedule: optional(z.enum(CHASE_SCHEDULES)),
    ...ChaseSettingsFields,
    due_date: optional(z.iso.date()),
    send: optional(z.boolean()),
    retention: optional(Retention),
    client_brief: optional(z.string().max(5000)),
    folder_id: optional(z.string().min(1).max(64)).meta({
      description: 'File the intake in a folder (fld_…)',
    }),
    also_notify: optional(AlsoNotify),
  })
  .meta({
    id: 'CreateIntake',
    examples: [
      {
        project_name: 'Website refresh',
        client: { email: 'dana@example.com', name: 'Dana' },
        items: [
          {
            key: 'logo',
            label: 'Your logo',
            type: 'image',
            required: true,
            constraints: { formats: ['svg', 'png'], min_width: 1000 },
          },
          { key: 'about', label: 'About your company', type: 'longtext', constraints: { max_chars: 2000 } },
        ],
        due_date: '2026-12-15',
      },
    ],
  });

export const ItemStatusRecord = z.object({ key: z.string(), status: z.enum(ITEM_STATUSES) });

export const FollowUp = z
  .object({
    recommended: z.enum(['webhook', 'schedule']),
    webhook: z.object({
      active_endpoints: z
        .number()
        .meta({ description: 'Enabled webhook endpoints of this account and mode' }),
      events: z.array(z.string()).meta({
        description:
          'The events they subscribe to; without an endpoint, the events to register one for (POST /v1/webhooks)',
      }),
      register_with: z
        .literal('manage_webhook')
        .meta({ description: 'The agent tool that registers a webhook endpoint (admin scope)' }),
    }),
    schedule: z.object({
      check_with: z.literal('get_intake_status'),
      every_hours: z.number().meta({
        description: "Check this often: tighter near the due date, never below the plan's polling limit",
      }),
      until: Timestamp.meta({ description: 'Stop checking after this (a week past the due date)' }),
    }),
  })
  .meta({
    id: 'FollowUp',
    description: 'How to learn about progress: the webhook when one is registered, else this polling plan.',
  });

export const CreatedIntake = z
  .object({
    intake_id: z.string(),
    portal_url: z.url(),
    status: z.enum(INTAKE_STATUSES),
    items: z.array(ItemStatusRecord),
    follow_up: FollowUp,
  })
  .meta({ id: 'CreatedIntake' });

/** What both the caller and the client see of an item: its definition and review state. */
export const ItemBasics = z.object({
  key: z.string(),
  label: z.string(),
  help: z.string().nullable(),
  example: z
    .string()
    .nullable()
    .meta({ description: 'An example answer: the portal shows it as the placeholder' }),
  type: z.string(),
  required: z.boolean(),
  constraints: Constraints,
  schema: ItemJsonSchema.nullable(),
  options: z.array(ItemOption).nullable(),
  section: z
    .string()
    .nullable()
    .meta({ description: 'The section the item belongs to (consecutive items share it)' }),
  show_if: ShowIf.nullable(),
  status: z.enum(ITEM_STATUSES),
  revision_note: z.string().nullable(),
  review_note: z.string().nullable().meta({
    description:
      "The reviewer's latest note to the client: with a revision request, or with an approval (shown in the portal).",
  }),
});

export const ItemHistoryEntry = z
  .object({
    action: z.enum(['submitted', 'revision_requested', 'approved']),
    at: Timestamp,
    actor: z.object({
      type: z.enum(['api_key', 'user', 'client', 'system']).meta({
        description: 'system: the 72-hour auto-approval',
      }),
      id: z.string().nullable(),
    }),
    note: z.string().nullable(),
  })
  .meta({ id: 'ItemHistoryEntry' });

export const IntakeItem = ItemBasics.extend({
  submitted_at: Timestamp.nullable(),
  approved_at: Timestamp.nullable(),
  assignee: z.enum(ASSIGNEES),
  proposed: z
    .object({
      value: z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]),
      rationale: z.string(),
    })
    .nullable(),
  decided_by: z
    .enum(DECIDED_BY)
    .nullable()
    .meta({ description: 'owner items: who answered (owner: a person; agent_proposal: the proposal stood)' }),
  history: z.array(ItemHistoryEntry).meta({
    description: 'Submissions, revision requests and approvals, oldest first, with who and the note',
  }),
}).meta({ id: 'IntakeItem' });

export const Intake = z
  .object({
    id: z.string(),
    intake_id: z.string().meta({ description: 'The same as id, under the name every other answer uses' }),
    project_name: z.string(),
    client: z.object({
      email: z.string(),
      name: z.string().nullable(),
      language: z.string(),
      phone: z.string().nullable(),
      timezone: z.string().nullable(),
      country: z.string().nullable(),
    }),
    status: z.enum(INTAKE_STATUSES),
    portal_url: z.string(),
    chase_schedule: z.string(),
    due_date: z.string().nullable(),
    retention: z.object({ mode: z.string(), days: z.number().nullable(), anonymize: z.boolean() }),
    template_id: z.string().nullable(),
    client_brief: z.string().nullable(),
    folder_id: z.string().nullable(),
    items: z.array(IntakeItem),
    recipients: z.array(Recipient).meta({
      description: 'The client and the also_notify people: each gets their own emails and reminders',
    }),
    livemode: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    sent_at: Timestamp.nullable(),
    completed_at: Timestamp.nullable(),
    archived_at: Timestamp.nullable(),
    client_last_seen: Timestamp.nullable(),
  })
  .meta({ id: 'Intake' });

export const IntakeListQuery = z.strictObject({
  status: optional(z.enum(INTAKE_STATUSES)),
  client_email: optional(z.string().min(1).max(254)),
  folder_id: optional(z.string().min(1).max(64)).meta({ description: 'Only intakes filed in this folder' }),
  q: optional(z.string().trim().min(1).max(200)).meta({
    description: 'Text search: project name, client name or client email contains it (case-insensitive)',
  }),
  awaiting_review: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .meta({
      description: 'true: only intakes with submitted items waiting for review; false: only those without',
    }),
  limit: PageLimit(100, 20),
  offset: z.coerce.number().int().min(0).default(0),
  starting_after: optional(z.string().min(1).max(64)).meta({
    description:
      'The id of the last intake of the previous page: the next page, newest first, however deep (instead of offset)',
  }),
});

export const IntakeList = z
  .object({
    total: z.number().meta({ description: 'How many intakes the whole list has, past this page too' }),
    has_more: z.boolean().meta({ description: 'Whether intakes follow this page' }),
    intakes: z.array(
      z.object({
        id: z.string(),
        intake_id: z.string().meta({ description: 'The same as id, as in every other answer' }),
        projectName: z.string(),
        clientEmail: z.string(),
        status: z.enum(INTAKE_STATUSES),
        createdAt: Timestamp,
        portal_url: z.string().meta({ description: "The client's portal link" }),
        awaiting_review: z
          .number()
          .meta({ description: 'Submitted items nobody has approved or sent back yet' }),
      }),
    ),
  })
  .meta({ id: 'IntakeList', description: 'camelCase records, as SPEC gives them' });

export const ChaseRecord = z
  .object({
    recipient: z.string().nullable().meta({
      description:
        'The address (or phone) it went to; for a scheduled one, whose reminder it is (null: the client)',
    }),
    chase_id: z.string(),
    channel: z.enum(['email', 'sms']),
    sent_at: Timestamp.nullable(),
    status: z.enum(['scheduled', 'sent', 'bounced', 'failed', 'cancelled']),
    attempt_no: z.number(),
    scheduled_for: Timestamp.meta({ description: 'When it was or is due (test-mode time for test intakes)' }),
    trigger: z
      .enum(['schedule', 'manual'])
      .meta({ description: 'A reminder of the series, or a manual chase' }),
  })
  .meta({ id: 'ChaseRecord' });

export const IntakeStatusObject = z
  .object({
    intake_id: z.string(),
    status: z.enum(INTAKE_STATUSES),
    due_date: z.string().nullable(),
    client_last_seen: Timestamp.nullable(),
    progress: z.object({
      submitted: z.number(),
      total: z.number(),
      outstanding: z.number(),
      percent: z.number(),
      awaiting_review: z
        .number()
        .meta({ description: 'Submitted items nobody has approved or sent back yet' }),
    }),
    items: z.array(
      z.object({
        key: z.string(),
        status: z.enum(ITEM_STATUSES),
        submitted_at: Timestamp.nullable(),
        label: z.string(),
        assignee: z.enum(ASSIGNEES).meta({
          description: "owner: a decision for the account's people, not counted in progress",
        }),
      }),
    ),
    chases: z.array(ChaseRecord),
    recipients: z.array(Recipient).meta({
      description: 'The client and also_notify people, with opt-outs and bounce suppressions',
    }),
  })
  .meta({ id: 'IntakeStatus', description: 'No file content, values or signed URLs.' });

export const AddItemsBody = z.strictObject({ items: z.array(ItemDefinition).min(1).max(100) });
export const ItemsAdded = z
  .object({ intake_id: z.string(), items_added: z.array(ItemStatusRecord) })
  .meta({ id: 'ItemsAdded' });

export const RevisionBody = z.strictObject({
  item_key: z.string().min(1),
  note: z.string().trim().min(1).max(2000),
});
export const RevisionResult = z
  .object({
    intake_id: z.string(),
    item_key: z.string(),
    status: z.literal('needs_revision'),
    client_notified: z.boolean(),
  })
  .meta({ id: 'RevisionResult' });

export const ApproveBody = z
  .strictObject({
    note: optional(z.string().trim().min(1).max(2000)).meta({
      description: 'A note to the client with the approval, shown in the portal and in the item history',
    }),
  })
  .nullish();

export const ApproveItemsBody = z
  .strictObject({
    item_keys: optional(z.array(z.string().min(1).max(64)).min(1).max(100)).meta({
      description:
        'Only these items (each submitted or already approved; 404 for an unknown key, 409 for one not submitted). Without it: every submitted item.',
    }),
  })
  .nullish();

export const ApprovedItems = z
  .object({
    intake_id: z.string(),
    approved: z
      .array(z.string())
      .meta({ description: 'The keys approved by this call (already approved ones are not repeated)' }),
    status: z.enum(INTAKE_STATUSES).meta({ description: "The intake's status after the approvals" }),
  })
  .meta({ id: 'ApprovedItems' });

export const ApprovalResult = z
  .object({ intake_id: z.string(), item_key: z.string(), status: z.literal('approved') })
  .meta({ id: 'ApprovalResult' });

const QueryBoolean = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1')
  .optional();

export const ResultsQuery = z.strictObject({
  only_new: QueryBoolean.meta({
    description: 'Only items approved since the previous call to this endpoint',
  }),
  include_pending: QueryBoolean.meta({ description: 'Also items in submitted status' }),
});

/** Why a secret's value is null in results. */
export const SECRET_WITHHELD_REASONS = ['secrets:read', 'revealed'] as const;

export const ResultItem = z.object({
  key: z.string(),
  type: z.string(),
  status: z.enum(ITEM_STATUSES),
  submitted_at: Timestamp.nullable(),
  approved_at: Timestamp.nullable(),
  value: z
    .union([
      z.string(),
      z.number(),
      z.boolean(),
      z.array(z.unknown()),
      z.record(z.string(), z.unknown()),
      z.null(),
    ])
    .meta({
      description:
        "The answer: a string (text kinds, select, url, email, phone, date; a revealed secret), a number, a boolean, a list of strings (multiselect, color_list), {files: [...]} (file kinds), any JSON the item's schema allows (structured), or null (no answer, or a withheld secret)",
    }),
  revealed_at: Timestamp.nullable().optional(),
  withheld: z.enum(SECRET_WITHHELD_REASONS).optional().meta({
    description:
      'Secrets only, when value is null for a reason: secrets:read (the key lacks that scope) or revealed (shown once already, at revealed_at)',
  }),
  decided_by: z
    .enum(DECIDED_BY)
    .nullable()
    .optional()
    .meta({ description: 'Decisions (owner items) only: owner or agent_proposal' }),
  proposed: Proposal.nullable().optional().meta({
    description:
      'Open decisions only (include_pending): the proposal a person will accept or override in the dashboard, null when there is none',
  }),
  comments: z.array(Comment).meta({
    description:
      "The item's conversation, oldest first: the owner's side (actor says who) and the client's (the same comments as GET /v1/intakes/:id/comments)",
  }),
});

export const Results = z
  .object({ intake_id: z.string(), status: z.enum(INTAKE_STATUSES), items: z.array(ResultItem) })
  .meta({
    id: 'Results',
    description:
      "value: a string (text kinds), an object (structured), or {files: [...]} with signed URLs valid 24 hours (file kinds); comments: the item's conversation. Secret values are shown once to keys with secrets:read, and once more after each resubmission; a withheld secret has value null and withheld naming why.",
  });

export const SecretValue = z
  .object({ intake_id: z.string(), item_key: z.string(), value: z.string(), revealed_at: Timestamp })
  .meta({ id: 'SecretValue' });

export const IntakeParams = z.strictObject({ id: z.string().min(1).max(64) });
export const IntakeItemParams = z.strictObject({
  id: z.string().min(1).max(64),
  key: z.string().min(1).max(64),
});
