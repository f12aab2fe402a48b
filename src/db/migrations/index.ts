import type { Migration, MigrationProvider } from 'kysely';
import { foundation } from './0001_foundation.js';
import { intakes } from './0002_intakes.js';
import { webhooks } from './0003_webhooks.js';
import { notifications } from './0004_notifications.js';
import { portal } from './0005_portal.js';
import { recipientsHistory } from './0007_recipients_history.js';
import { foldersBriefs } from './0006_folders_briefs.js';
import { dashboard } from './0008_dashboard.js';
import { billingAgentAuth } from './0009_billing_agent_auth.js';
import { scaleIndexes } from './0010_scale_indexes.js';
import { clientCountry } from './0011_client_country.js';
import { jobsKindDue } from './0012_jobs_kind_due.js';
import { jobUniqueKey } from './0013_job_unique_key.js';
import { jobConcurrencyKey } from './0014_job_concurrency_key.js';
import { ownerNotices } from './0015_owner_notices.js';
import { sendsAreJobs } from './0016_sends_are_jobs.js';
import { itemsAwaitingReview } from './0017_items_awaiting_review.js';
import { uploadReservations } from './0020_upload_reservations.js';
import { signInCooldown } from './0022_sign_in_cooldown.js';
import { oauthGrants } from './0024_oauth_grants.js';
import { operations } from './0025_operations.js';
import { itemComments } from './0026_item_comments.js';
import { teams } from './0028_teams.js';
import { memberships } from './0029_memberships.js';
import { dropJobsDue } from './0034_drop_jobs_due.js';
import { commentActorName } from './0036_comment_actor_name.js';
import { jobUnsentAttempts } from './0037_job_unsent_attempts.js';
import { jobsClaimIndexes } from './0038_jobs_claim_indexes.js';
import { answerVersions } from './0039_answer_versions.js';
import { intakeCounts } from './0040_intake_counts.js';
import { intakeCountSlots } from './0041_intake_count_slots.js';
import { answerVersionsPostgres } from './0042_answer_versions_postgres.js';
import { chaseAfterIntakeLock } from './0043_chase_after_intake_lock.js';
import { intakeAwaitingReview } from './0044_intake_awaiting_review.js';
import { intakeCountsRecounted } from './0045_intake_counts_recounted.js';
import { intakesAwaitingReviewIndex } from './0046_intakes_awaiting_review_index.js';
import { intakeDeletionIndexes } from './0047_intake_deletion_indexes.js';
import { auditActionsIndex } from './0048_audit_actions_index.js';
import { idempotencyKeysCreated } from './0049_idempotency_keys_created.js';
import { intakeListFilterIndexes } from './0050_intake_list_filter_indexes.js';
import { dropUnreadIndexes } from './0051_drop_unread_indexes.js';
import { oauthRefreshTokenIndexes } from './0052_oauth_refresh_token_indexes.js';

/** Migrations in order; names sort in the order they must run. Never edit one that has shipped. */
const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_intakes': intakes,
  '0003_webhooks': webhooks,
  '0004_notifications': notifications,
  '0005_portal': portal,
  '0007_recipients_history': recipientsHistory,
  '0006_folders_briefs': foldersBriefs,
  '0008_dashboard': dashboard,
  '0009_billing_agent_auth': billingAgentAuth,
  '0010_scale_indexes': scaleIndexes,
  '0011_client_country': clientCountry,
  '0012_jobs_kind_due': jobsKindDue,
  '0013_job_unique_key': jobUniqueKey,
  '0014_job_concurrency_key': jobConcurrencyKey,
  '0015_owner_notices': ownerNotices,
  '0016_sends_are_jobs': sendsAreJobs,
  '0017_items_awaiting_review': itemsAwaitingReview,
  '0020_upload_reservations': uploadReservations,
  '0022_sign_in_cooldown': signInCooldown,
  '0024_oauth_grants': oauthGrants,
  '0025_operations': operations,
  '0026_item_comments': itemComments,
  '0028_teams': teams,
  '0029_memberships': memberships,
  '0034_drop_jobs_due': dropJobsDue,
  '0036_comment_actor_name': commentActorName,
  '0037_job_unsent_attempts': jobUnsentAttempts,
  '0038_jobs_claim_indexes': jobsClaimIndexes,
  '0039_answer_versions': answerVersions,
  '0040_intake_counts': intakeCounts,
  '0041_intake_count_slots': intakeCountSlots,
  '0042_answer_versions_postgres': answerVersionsPostgres,
  '0043_chase_after_intake_lock': chaseAfterIntakeLock,
  '0044_intake_awaiting_review': intakeAwaitingReview,
  '0045_intake_counts_recounted': intakeCountsRecounted,
  '0046_intakes_awaiting_review_index': intakesAwaitingReviewIndex,
  '0047_intake_deletion_indexes': intakeDeletionIndexes,
  '0048_audit_actions_index': auditActionsIndex,
  '0049_idempotency_keys_created': idempotencyKeysCreated,
  '0050_intake_list_filter_indexes': intakeListFilterIndexes,
  '0051_drop_unread_indexes': dropUnreadIndexes,
  '0052_oauth_refresh_token_indexes': oauthRefreshTokenIndexes,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
