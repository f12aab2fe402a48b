import type { Generated } from 'kysely';
import type { ChaseChannel, ChaseStatus } from '../domain/chases.js';
import type { IntakeStatus, ItemStatus } from '../domain/intake-state.js';

/**
 * Table types. Portable across SQLite and PostgreSQL: timestamps are ISO 8601 UTC text
 * (they sort as text), booleans are 0/1 integers, JSON is text.
 * Every tenant-owned table leads with account_id (and livemode): tenant isolation by construction.
 */
export interface AccountsTable {
  id: string;
  name: string;
  email: string;
  plan: string;
  default_language: string;
  rate_limit_per_hour: number | null;
  test_clock_offset_ms: Generated<number>;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  livemode: number;
  name: string;
  scopes: string;
  prefix: string;
  key_hash: string;
  created_by_key_id: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** OAuth access tokens only: the key stops working at this instant (null: never expires). */
  expires_at: string | null;
  /** The person who made the key (its scopes never exceed their role); null: the account holder's own. */
  created_by_user_id: string | null;
}

export interface AuditEntriesTable {
  id: string;
  account_id: string;
  livemode: number;
  action: string;
  resource_type: string;
  resource_id: string | null;
  actor_type: string;
  actor_id: string | null;
  /** The person behind the actor: an API key's maker, or the signed-in user (null: none recorded). */
  person_id: string | null;
  request_id: string | null;
  created_at: string;
}

export interface IdempotencyKeysTable {
  api_key_id: string;
  idem_key: string;
  account_id: string;
  livemode: number;
  request_hash: string;
  resource_type: string;
  resource_id: string | null;
  created_at: string;
}

export interface UsageCountersTable {
  account_id: string;
  livemode: number;
  period: string;
  metric: string;
  value: number;
}

/**
 * How many intakes an account has per mode and status, kept by triggers on intakes (migration 0040): the
 * sum of `n` over the slots (migration 0041: one per writing connection on PostgreSQL; 0 on SQLite).
 */
export interface IntakeCountsTable {
  account_id: string;
  livemode: number;
  status: string;
  slot: Generated<number>;
  /** A bigint: PostgreSQL's driver gives it as a string. */
  n: number | string;
}

export interface IntakesTable {
  id: string;
  account_id: string;
  livemode: number;
  project_name: string;
  client_email: string;
  client_name: string | null;
  client_language: string;
  client_phone: string | null;
  client_timezone: string | null;
  /** ISO 3166-1 alpha-2, set by the caller: the country of phone numbers typed without "+". */
  client_country?: string | null;
  status: IntakeStatus;
  chase_schedule: string;
  due_date: string | null;
  retention_mode: string;
  retention_days: number | null;
  retention_anonymize: number;
  template_id: string | null;
  client_brief: string | null;
  /** The folder (fld_…) the intake is filed in, or null. */
  folder_id: string | null;
  approval_counter: Generated<number>;
  results_cursor: Generated<number>;
  /** How many of its items are submitted, awaiting review: kept by triggers on intake_items (migration 0044). */
  awaiting_review: Generated<number>;
  created_at: string;
  updated_at: string;
  sent_at: string | null;
  completed_at: string | null;
  archived_at: string | null;
  client_first_viewed_at: string | null;
  client_last_seen_at: string | null;
  results_collected_at: string | null;
  purged_at: string | null;
  anonymized_at: string | null;
}

export interface IntakeItemsTable {
  intake_id: string;
  account_id: string;
  livemode: number;
  key: string;
  position: number;
  /** The item definition as JSON (type, label, help, required, constraints, schema, options). */
  definition: string;
  status: ItemStatus;
  /** The client's value as JSON (text kinds, structured, choices); null for files and secrets. */
  value_json: string | null;
  /** Secret items: AES-256-GCM ciphertext; cleared after retention or reveal-and-purge. */
  secret_ciphertext: string | null;
  revision_note: string | null;
  saved_at: string | null;
  submitted_at: string | null;
  approved_at: string | null;
  /** Order of approval within the intake: the results cursor (only_new) compares against it. */
  approval_seq: number | null;
  secret_revealed_at: string | null;
  /** Owner items (decisions): owner when a person answered, agent_proposal when the proposal stood. */
  decided_by: string | null;
  created_at: string;
  /** The reviewer's latest note to the client (with a revision request or an approval). */
  review_note?: string | null;
}

/** A comment on an item: the owner's or the client's (see migration 0026). */
export interface ItemCommentsTable {
  id: string;
  account_id: string;
  livemode: number;
  intake_id: string;
  item_key: string;
  /** owner | client */
  author: string;
  /** Who acted: api_key | user | client (the audit log's actor types). */
  actor_type: string;
  actor_id: string | null;
  /** The person's name (else email) or the key's name when they wrote; null for the client. */
  actor_name: string | null;
  body: string;
  created_at: string;
  /** Order within the intake (creation times of one instant stay in the order they were made). */
  seq: number;
  /** An owner's comment: when the batched email to the client took it (null while it waits). */
  emailed_at: string | null;
}

export interface ItemFilesTable {
  id: string;
  intake_id: string;
  account_id: string;
  livemode: number;
  item_key: string;
  storage_key: string;
  name: string;
  size: number;
  content_type: string;
  width: number | null;
  height: number | null;
  sha256: string;
  created_at: string;
}

export interface TemplatesTable {
  id: string;
  account_id: string;
  livemode: number;
  name: string;
  items: string;
  created_at: string;
}

export interface JobsTable {
  id: string;
  account_id: string;
  livemode: number;
  kind: string;
  subject_id: string;
  payload: string;
  /** Real time (epoch ms) at which the job is due. */
  due_at: number;
  attempts: Generated<number>;
  locked_until: number | null;
  last_error: string | null;
  created_at: string;
  /** Set on a job that must exist once: a second enqueue with the key, while it is pending, adds nothing. */
  unique_key: Generated<string | null>;
  /** What the job competes for (a webhook endpoint): its kind's keyConcurrency applies per key. */
  concurrency_key: Generated<string | null>;
  /** The W3C traceparent of the enqueueing request's span (tracing on), for the job's span to join. */
  trace_context: Generated<string | null>;
  /**
   * At most once: the attempts known to have ended before their send began (retried, not given up).
   * Set from `attempts` when such a failure is recorded; a claim with more attempts behind it than
   * these follows one that may have sent.
   */
  unsent_attempts: Generated<number>;
}

export interface EventsTable {
  id: string;
  account_id: string;
  livemode: number;
  type: string;
  intake_id: string | null;
  payload: string;
  occurred_at: string;
}

export interface ChasesTable {
  id: string;
  account_id: string;
  livemode: number;
  intake_id: string;
  channel: ChaseChannel;
  /** schedule (a reminder of the series) or manual (POST /v1/intakes/:id/chase). */
  trigger: 'schedule' | 'manual';
  /** The reminder's place in its series (schedule only). */
  sequence_no: number | null;
  /** Numbers every chase of the intake from 1, given when the chase leaves `scheduled`. */
  attempt_no: number | null;
  /**
   * scheduled until its dispatch job records the outcome (the job's lease is the only claim).
   * `sending`: written only by processes of the previous release (their own claim, with the
   * `locked_until` column this release no longer reads), until the last of them is replaced.
   */
  status: ChaseStatus | 'sending';
  /** The test or live world's time at which it is due. */
  scheduled_for: string;
  sent_at: string | null;
  recipient: string | null;
  message_id: string | null;
  provider_message_id: string | null;
  error: string | null;
  /** Sends that failed transiently (nothing delivered); each was retried by a new job after a backoff. */
  send_attempts: Generated<number>;
  created_at: string;
  updated_at: string;
  /** The reminder series it belongs to: an intake_recipients id, or null for the client's own. */
  recipient_id?: string | null;
}

export interface ChasePlansTable {
  intake_id: string;
  account_id: string;
  livemode: number;
  interval_minutes: number | null;
  max_reminders: number;
  respect_quiet_hours: number;
  chase_at_time: string | null;
  /** Test mode: the next reminder email hard-bounces (simulate bounce). */
  bounce_next: Generated<number>;
  opted_out_at: string | null;
  stalled_at: string | null;
  thanked_at: string | null;
  created_at: string;
  updated_at: string;
  /** The due date for which intake.overdue fired (it fires once per due date). */
  overdue_fired_for?: string | null;
}

/**
 * pending: queued; captured: kept in the test outbox (test mode, or no SMTP_URL / SMS_URL); dropped:
 * a test-mode SMS; sent: the provider accepted it; bounced: refused for good; failed: given up.
 */
export type MessageStatus = 'pending' | 'captured' | 'dropped' | 'sent' | 'bounced' | 'failed';

export interface MessagesTable {
  id: string;
  account_id: string;
  livemode: number;
  intake_id: string | null;
  chase_id: string | null;
  channel: ChaseChannel;
  template: string;
  /** JSON: what the template needs beyond the intake (revision note, added item keys…). */
  data: string;
  to_address: string;
  subject: string | null;
  text_body: string | null;
  html_body: string | null;
  /**
   * pending until its deliver_message job records the outcome (the job's lease is the only claim).
   * `sending`: as for chases, written only by processes of the previous release.
   */
  status: MessageStatus | 'sending';
  provider_message_id: string | null;
  error: string | null;
  /** Sends that failed transiently (nothing delivered); each was retried by a new job after a backoff. */
  send_attempts: Generated<number>;
  created_at: string;
  sent_at: string | null;
}

export interface SuppressionsTable {
  account_id: string;
  livemode: number;
  address: string;
  reason: string;
  message_id: string | null;
  created_at: string;
}

/** The client portal's look for an account (account settings `branding`). */
export interface AccountBrandingTable {
  account_id: string;
  /** A data: URL of an image (the portal makes no third-party requests), or null. */
  logo_url: string | null;
  /** #rrggbb, or null for the default. */
  accent_color: string | null;
  updated_at: string;
}

/** Folders group an account's intakes (per mode); deleting one unfiles its intakes. */
export interface FoldersTable {
  id: string;
  account_id: string;
  livemode: number;
  name: string;
  created_at: string;
  updated_at: string;
}

export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  livemode: number;
  url: string;
  /** JSON array of subscribed event names. */
  events: string;
  /** raw | slack | discord */
  format: string;
  /** The signing secret (whsec_…), AES-256-GCM sealed: signing needs it back. */
  secret_ciphertext: string;
  /** After rotate_secret: the old secret, which keeps signing until previous_secret_expires_at. */
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: string | null;
  /** enabled | disabled (an HTTP 410 answer deregisters the endpoint) */
  status: string;
  disabled_reason: string | null;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
}

/** pending: attempts to come; succeeded, failed (attempts used up) and cancelled are final. */
export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export interface WebhookDeliveriesTable {
  id: string;
  account_id: string;
  livemode: number;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  /** The event payload (JSON) as recorded; the body sent is rendered from it per the endpoint's format. */
  payload: string;
  /** 1 for POST /v1/webhooks/:id/test: a fictional event, one attempt. */
  test: number;
  /** pending | succeeded | failed | cancelled */
  status: WebhookDeliveryStatus;
  attempts: Generated<number>;
  next_attempt_at: string | null;
  /**
   * The previous release's webhook dispatcher: the process holding the delivery, and until when (real
   * epoch ms). This release neither reads nor sets them (an attempt's job lease is the only claim; it
   * writes only nulls); processes of the previous release claim, renew and fence by them until the last
   * is replaced, so they are dropped in the next release (a column goes one release after the code
   * stops using it).
   */
  lease_owner: string | null;
  lease_until: number | null;
  created_at: string;
  completed_at: string | null;
}

export interface WebhookAttemptsTable {
  id: string;
  account_id: string;
  livemode: number;
  endpoint_id: string;
  delivery_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  requested_at: string;
  duration_ms: number;
  response_status: number | null;
  response_excerpt: string | null;
  error: string | null;
  /** succeeded | failed | gone */
  outcome: string;
  next_attempt_at: string | null;
}

/** A person who signs in to the dashboard for an account (the account's email is its first user). */
export interface AccountUsersTable {
  id: string;
  account_id: string;
  /** Lower-cased; unique per account (one person may belong to several accounts). */
  email: string;
  /** owner | admin | member | viewer (domain/roles.ts); exactly one owner per account */
  role: string;
  invited_by_user_id: string | null;
  created_at: string;
  last_signed_in_at: string | null;
  name: string | null;
  /** invited until the first sign-in, then active */
  status: string;
  /** When the person last signed in to, or switched to, this account: a sign-in link lands in the latest. */
  last_used_at: string | null;
}

/** A one-time sign-in link: single use, short-lived, stored as the SHA-256 of its token. */
export interface SignInTokensTable {
  token_hash: string;
  user_id: string;
  /** The dashboard path to land on after signing in. */
  return_to: string | null;
  expires_at: string;
  used_at: string | null;
  created_at: string;
  /** `sign_in` (asked for on the sign-in page: the per-address cool-down counts these) or `invitation`. */
  purpose: Generated<string>;
}

/** A dashboard browser session; the cookie holds a random id, this row its SHA-256. */
export interface UserSessionsTable {
  id_hash: string;
  user_id: string;
  account_id: string;
  /** The world the dashboard shows: 1 live, 0 test (the live/test toggle). */
  livemode: number;
  created_at: string;
  expires_at: string;
  last_seen_at: string;
}

/** Someone besides the client who gets the intake's emails and their own reminders (also_notify). */
export interface IntakeRecipientsTable {
  id: string;
  account_id: string;
  livemode: number;
  intake_id: string;
  /** Lower-case. */
  email: string;
  name: string | null;
  /** Order of addition within the intake. */
  position: number;
  opted_out_at: string | null;
  /** Three of their reminder emails in a row bounced: their series ended (reinstate resumes it). */
  stalled_at: string | null;
  created_at: string;
  updated_at: string;
}

/** What happened to an item: submitted, revision_requested, approved (with who and the note). */
export interface ItemHistoryTable {
  id: string;
  account_id: string;
  livemode: number;
  intake_id: string;
  item_key: string;
  action: string;
  /** api_key | user | client | system */
  actor_type: string;
  actor_id: string | null;
  note: string | null;
  occurred_at: string;
  /** Order within the intake (several entries can share a timestamp). */
  seq: number;
}

/** A person's choice of owner notifications (no row: the default for their role). */
export interface NoticeSettingsTable {
  account_id: string;
  /** The person's address, lower-case: the account holder, a dashboard user, later a team member. */
  email: string;
  /** each | daily | off */
  frequency: string;
  /** IANA time zone of the daily digest; null: UTC. */
  time_zone: string | null;
  updated_at: string;
}

/** Something the account's people are told about (a public event of an intake), waiting to be sent. */
/** Bytes of an unfinished resumable upload, counted against the storage quota until it ends. */
export interface UploadReservationsTable {
  upload_id: string;
  account_id: string;
  livemode: number;
  intake_id: string;
  bytes: number;
  created_at: string;
}

export interface OwnerNoticesTable {
  id: string;
  account_id: string;
  livemode: number;
  intake_id: string;
  event_id: string;
  /** The public event's type (item.submitted, chase.bounced…). */
  type: string;
  /** JSON: the event's fields the email needs (item key, address, due date…). */
  data: string;
  /** The world's time of the event. */
  occurred_at: string;
  /** When the intake's batch (people notified of each sending) took it; null while it waits. */
  batched_at: string | null;
}

export interface Database {
  notice_settings: NoticeSettingsTable;
  owner_notices: OwnerNoticesTable;
  intake_recipients: IntakeRecipientsTable;
  item_history: ItemHistoryTable;
  intakes: IntakesTable;
  intake_counts: IntakeCountsTable;
  intake_items: IntakeItemsTable;
  item_comments: ItemCommentsTable;
  item_files: ItemFilesTable;
  templates: TemplatesTable;
  jobs: JobsTable;
  events: EventsTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  audit_entries: AuditEntriesTable;
  idempotency_keys: IdempotencyKeysTable;
  usage_counters: UsageCountersTable;
  upload_reservations: UploadReservationsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  chases: ChasesTable;
  chase_plans: ChasePlansTable;
  messages: MessagesTable;
  suppressions: SuppressionsTable;
  account_branding: AccountBrandingTable;
  folders: FoldersTable;
  account_users: AccountUsersTable;
  sign_in_tokens: SignInTokensTable;
  user_sessions: UserSessionsTable;
  account_billing: AccountBillingTable;
  billing_sessions: BillingSessionsTable;
  oauth_clients: OAuthClientsTable;
  oauth_codes: OAuthCodesTable;
  oauth_refresh_tokens: OAuthRefreshTokensTable;
  device_authorizations: DeviceAuthorizationsTable;
}

/** The account's customer at its billing provider (Stripe), and the subscription that sets its plan. */
export interface AccountBillingTable {
  account_id: string;
  /** stripe | local */
  provider: string;
  customer_id: string | null;
  subscription_id: string | null;
  subscription_status: string | null;
  updated_at: string;
}

/** The local billing provider's checkout and portal sessions (their id is the page's capability). */
export interface BillingSessionsTable {
  id: string;
  account_id: string;
  /** checkout | portal */
  kind: string;
  /** checkout: the plan bought */
  plan: string | null;
  /** Where the page sends the browser when done (the dashboard, or a same-origin return_url). */
  return_url: string;
  created_at: string;
  expires_at: string;
  completed_at: string | null;
}

/** OAuth clients registered dynamically (RFC 7591); not tenant-owned: registration is anonymous. */
export interface OAuthClientsTable {
  id: string;
  name: string;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  /** none | client_secret_post | client_secret_basic */
  auth_method: string;
  secret_hash: string | null;
  created_at: string;
}

export interface OAuthCodesTable {
  code_hash: string;
  client_id: string;
  account_id: string;
  livemode: number;
  user_id: string;
  /** JSON array of granted scopes. */
  scopes: string;
  redirect_uri: string;
  /** PKCE S256 challenge. */
  code_challenge: string;
  resource: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface OAuthRefreshTokensTable {
  token_hash: string;
  id: string;
  client_id: string;
  account_id: string;
  livemode: number;
  user_id: string;
  scopes: string;
  resource: string | null;
  /** The access token (API key) issued with this refresh token. */
  access_key_id: string | null;
  /** The grant: the authorization code's hash, kept through every rotation (older tokens: their own id). */
  grant_id: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

/** RFC 8628 device authorizations: the CLI polls with the device code, a user approves the user code. */
export interface DeviceAuthorizationsTable {
  device_code_hash: string;
  user_code: string;
  client_name: string;
  requested_scopes: string;
  /** pending | approved | denied | consumed */
  status: string;
  account_id: string | null;
  livemode: number | null;
  user_id: string | null;
  scopes: string | null;
  interval_seconds: number;
  last_polled_ms: number | null;
  created_at: string;
  expires_at: string;
}
