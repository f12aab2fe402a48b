import type { Generated } from 'kysely';

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

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  audit_entries: AuditEntriesTable;
  idempotency_keys: IdempotencyKeysTable;
  usage_counters: UsageCountersTable;
}
