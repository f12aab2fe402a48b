import type { Kysely, Selectable } from 'kysely';
import type { Database, NoticeSettingsTable, OwnerNoticesTable } from '../../db/schema.js';
import type { NoticeData, NoticeEventType } from '../../domain/owner-notices.js';

export type NoticeSettingRow = Selectable<NoticeSettingsTable>;

/** A notice as the service sees it: its type typed and its data parsed from JSON here, once. */
export type OwnerNoticeRow = Omit<Selectable<OwnerNoticesTable>, 'type' | 'data'> & {
  type: NoticeEventType;
  data: NoticeData;
};

const noticeOf = (row: Selectable<OwnerNoticesTable>): OwnerNoticeRow => ({
  ...row,
  type: row.type as NoticeEventType,
  data: JSON.parse(row.data) as NoticeData,
});

interface Tenant {
  accountId: string;
  livemode: boolean;
}

export async function settingsOf(db: Kysely<Database>, accountId: string): Promise<NoticeSettingRow[]> {
  return db.selectFrom('notice_settings').selectAll().where('account_id', '=', accountId).execute();
}

export async function settingOf(
  db: Kysely<Database>,
  accountId: string,
  email: string,
): Promise<NoticeSettingRow | undefined> {
  return db
    .selectFrom('notice_settings')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('email', '=', email.toLowerCase())
    .executeTakeFirst();
}

export async function saveSetting(db: Kysely<Database>, row: NoticeSettingRow): Promise<void> {
  await db
    .insertInto('notice_settings')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['account_id', 'email']).doUpdateSet({
        frequency: row.frequency,
        time_zone: row.time_zone,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

export async function insertNotice(db: Kysely<Database>, row: OwnerNoticeRow): Promise<void> {
  await db
    .insertInto('owner_notices')
    .values({ ...row, data: JSON.stringify(row.data) })
    .execute();
}

/**
 * Takes an intake's waiting notices for its batch: marks them taken and returns them, oldest first. A
 * range of their index, which starts with the account and mode.
 */
export async function takeWaitingNotices(
  db: Kysely<Database>,
  tenant: Tenant,
  intakeId: string,
  at: string,
): Promise<OwnerNoticeRow[]> {
  const waiting = await db
    .selectFrom('owner_notices')
    .selectAll()
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId)
    .where('batched_at', 'is', null)
    .orderBy('occurred_at')
    .orderBy('id')
    .execute();
  if (waiting.length === 0) return [];

  await db
    .updateTable('owner_notices')
    .set({ batched_at: at })
    .where(
      'id',
      'in',
      waiting.map((n) => n.id),
    )
    .execute();
  return waiting.map(noticeOf);
}

/** A tenant's notices that occurred after `from` and up to `to` (the world's times), oldest first. */
export async function noticesBetween(
  db: Kysely<Database>,
  tenant: Tenant,
  from: string,
  to: string,
): Promise<OwnerNoticeRow[]> {
  const rows = await db
    .selectFrom('owner_notices')
    .selectAll()
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('occurred_at', '>', from)
    .where('occurred_at', '<=', to)
    .orderBy('occurred_at')
    .orderBy('id')
    .execute();
  return rows.map(noticeOf);
}

/** Forgets a tenant's notices that occurred before `before` and were batched (no digest reaches them). */
export async function pruneNotices(db: Kysely<Database>, tenant: Tenant, before: string): Promise<void> {
  await db
    .deleteFrom('owner_notices')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('occurred_at', '<', before)
    .where('batched_at', 'is not', null)
    .execute();
}

/** The intake's notices: a range of their index, which starts with the account and mode. */
export async function deleteNoticesOfIntake(
  db: Kysely<Database>,
  tenant: Tenant,
  intakeId: string,
): Promise<void> {
  await db
    .deleteFrom('owner_notices')
    .where('account_id', '=', tenant.accountId)
    .where('livemode', '=', tenant.livemode ? 1 : 0)
    .where('intake_id', '=', intakeId)
    .execute();
}
