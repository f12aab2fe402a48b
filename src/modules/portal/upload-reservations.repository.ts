import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

export interface ReservationWorld {
  accountId: string;
  livemode: boolean;
}

export async function insertReservation(
  db: Kysely<Database>,
  row: { uploadId: string; world: ReservationWorld; intakeId: string; bytes: number; at: Date },
): Promise<void> {
  await db
    .insertInto('upload_reservations')
    .values({
      upload_id: row.uploadId,
      account_id: row.world.accountId,
      livemode: row.world.livemode ? 1 : 0,
      intake_id: row.intakeId,
      bytes: row.bytes,
      created_at: row.at.toISOString(),
    })
    .execute();
}

export async function deleteReservation(db: Kysely<Database>, uploadId: string): Promise<void> {
  await db.deleteFrom('upload_reservations').where('upload_id', '=', uploadId).execute();
}

/** Bytes reserved by the account's unfinished uploads started after `since` (older ones have expired). */
export async function reservedBytes(
  db: Kysely<Database>,
  world: ReservationWorld,
  since: Date,
): Promise<number> {
  const row = await db
    .selectFrom('upload_reservations')
    .select((eb) => eb.fn.sum<number | string | null>('bytes').as('total'))
    .where('account_id', '=', world.accountId)
    .where('livemode', '=', world.livemode ? 1 : 0)
    .where('created_at', '>', since.toISOString())
    .executeTakeFirst();
  return Number(row?.total ?? 0);
}

export async function deleteExpiredReservations(db: Kysely<Database>, before: Date): Promise<void> {
  await db.deleteFrom('upload_reservations').where('created_at', '<=', before.toISOString()).execute();
}
