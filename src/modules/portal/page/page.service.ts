import type { TFunction } from 'i18next';
import { applicableKeys } from '../../../domain/conditions.js';
import { isFileType, type ItemDefinition } from '../../../domain/items.js';
import { planOf } from '../../../domain/plans.js';
import { ApiError } from '../../../http/errors.js';
import { translator } from '../../../i18n/index.js';
import type { AppServices } from '../../../services.js';
import { findIntakeById, itemsOf, type IntakeRow } from '../../intakes/intakes.service.js';
import { definitionBasics } from '../../intakes/intakes.mappers.js';
import { worldOfIntake } from '../../../kernel/world.js';
import { accountLogo, logoPath, portalBranding } from '../../accounts/branding.js';
import {
  buildView,
  countryOfIntake,
  recordView,
  removeFile,
  saveValue,
  submitAll,
  submitItem,
} from '../portal.service.js';
import { effectiveMaxBytes } from './card.js';
import { apiErrorMessage, clientErrorMessage, valueFromItemForm } from './form-values.js';
import { type Branding, type CardError, type PageModel, type ViewItem } from './model.js';
import { pageLanguage, type LanguageChoice } from './language.js';
import { fieldErrors, type FormFields } from './schema-form.js';

/** What the portal page of an intake id shows: the intake, a closed notice, or nothing (404). */
export type PageState =
  | { kind: 'not_found'; t: TFunction; language: string }
  | { kind: 'purged'; t: TFunction; language: string; branding: Branding }
  | { kind: 'ready'; model: PageModel; intake: IntakeRow };

async function accountOf(services: AppServices, accountId: string) {
  return services.db.kysely
    .selectFrom('accounts')
    .select(['id', 'name', 'plan'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
}

async function brandingFor(
  services: AppServices,
  intake: { id: string },
  account: { id: string; name: string; plan: string },
) {
  const branding = await portalBranding(
    services.db.kysely,
    account,
    planOf(account.plan).features.custom_branding,
  );
  // The logo is served from this origin (never inlined, never a third-party address).
  const logoUrl = branding.logoUrl ? logoPath(intake.id, branding.logoUrl) : null;
  return { ...branding, logoUrl };
}

/** The branding an intake's pages show (the account's name, logo and accent colour). */
export async function intakeBranding(
  services: AppServices,
  intake: { id: string; account_id: string },
): Promise<Branding> {
  return brandingFor(services, intake, await accountOf(services, intake.account_id));
}

/**
 * Loads the page's state; `record` marks a real view (client_last_seen, intake.viewed, client.viewed);
 * `language` is what the request says about the reader's language (see pageLanguage).
 */
export async function loadPage(
  services: AppServices,
  id: string,
  options: { ip: string; record: boolean; language: LanguageChoice },
): Promise<PageState> {
  const db = services.db.kysely;
  const intake = /^(in|int)_[A-Za-z0-9]{1,64}$/.test(id) ? await findIntakeById(db, id) : undefined;
  if (!intake || intake.status === 'draft') {
    const language = pageLanguage(options.language, null);
    return { kind: 'not_found', t: translator(language, 'portal'), language };
  }
  const language = pageLanguage(options.language, intake.client_language);
  const t = translator(language, 'portal');
  const account = await accountOf(services, intake.account_id);
  const branding = await brandingFor(services, intake, account);
  if (intake.purged_at) return { kind: 'purged', t, language, branding };
  const closed = intake.status === 'archived';
  if (options.record && !closed) {
    const world = await worldOfIntake(db, intake, { type: 'client', id: null }, services.clock);
    await recordView(services, world, intake, options.ip);
  }
  const fresh = (await findIntakeById(db, intake.id)) ?? intake;
  const model = await modelOf(services, fresh, { t, language, branding, plan: account.plan, closed });
  return { kind: 'ready', model, intake: fresh };
}

async function modelOf(
  services: AppServices,
  intake: IntakeRow,
  page: { t: TFunction; language: string; branding: Branding; plan: string; closed: boolean },
): Promise<PageModel> {
  const controllers = new Set(
    (await itemsOf(services.db.kysely, intake.id)).flatMap((row) => row.definition.show_if?.item_key ?? []),
  );
  return {
    controllers,
    view: await buildView(services.db.kysely, intake, services),
    t: page.t,
    language: page.language,
    branding: page.branding,
    planMaxFileBytes: planOf(page.plan).max_file_bytes,
    timeZone: intake.client_timezone,
    country: countryOfIntake(intake),
    closed: page.closed,
    errors: new Map(),
    notice: null,
    sent: null,
  };
}

/**
 * The page as the client would see it, for its owner (the caller found the intake in the owner's
 * world): drafts included, and nothing recorded: no visit, no event, no change.
 */
export async function previewModel(services: AppServices, intake: IntakeRow): Promise<PageModel> {
  // The client's language, not the owner's browser's: the page as the client gets it.
  const language = pageLanguage({}, intake.client_language);
  const account = await accountOf(services, intake.account_id);
  const branding = await brandingFor(services, intake, account);
  return modelOf(services, intake, {
    t: translator(language, 'portal'),
    language,
    branding,
    plan: account.plan,
    closed: intake.status === 'archived',
  });
}

/** An intake not yet saved (the builder's cards), as the preview shows it. */
export interface UnsavedIntake {
  projectName: string;
  clientName: string | null;
  language: string;
  dueDate: string | null;
  brief: string | null;
  items: readonly ItemDefinition[];
}

/**
 * The page the client would see for an intake not yet saved: every item pending, nothing answered.
 * Built from the item definitions alone; nothing is read but the account's branding, nothing written.
 */
export async function unsavedPreviewModel(
  services: AppServices,
  accountId: string,
  draft: UnsavedIntake,
): Promise<PageModel> {
  const language = pageLanguage({}, draft.language);
  const account = await accountOf(services, accountId);
  const branding = await portalBranding(
    services.db.kysely,
    account,
    planOf(account.plan).features.custom_branding,
  );
  // As the client first sees it: nothing answered, so an item shown only after an answer is not there yet.
  const applies = applicableKeys(
    draft.items.map((def) => ({ key: def.key, show_if: def.show_if, value: undefined })),
  );
  const items = draft.items.filter((def) => def.assignee !== 'owner' && applies.has(def.key));
  return {
    view: {
      intake_id: 'in_preview',
      project_name: draft.projectName,
      client_name: draft.clientName,
      language,
      due_date: draft.dueDate,
      status: 'sent',
      brief: draft.brief,
      brief_files: [],
      progress: { submitted: 0, total: items.length, outstanding: items.length, percent: 0 },
      comments: [],
      items: items.map((def) => ({
        ...definitionBasics(def),
        status: 'pending' as const,
        revision_note: null,
        review_note: null,
        value: null,
        secret_saved: false,
        files: [],
        saved_at: null,
        submitted_at: null,
      })),
    },
    t: translator(language, 'portal'),
    language,
    // An inline logo is shown as it is (the page's CSP allows data: images); no intake serves it yet.
    branding: { ...branding, logoUrl: branding.logoUrl?.startsWith('data:') ? branding.logoUrl : null },
    planMaxFileBytes: planOf(account.plan).max_file_bytes,
    timeZone: null,
    country: undefined,
    closed: false,
    errors: new Map(),
    notice: null,
    sent: null,
    controllers: new Set(draft.items.flatMap((def) => def.show_if?.item_key ?? [])),
  };
}

/** The logo image behind the page's brand (decoded from the account's data: URL). */
export async function loadLogo(
  services: AppServices,
  id: string,
): Promise<{ type: string; bytes: Buffer } | undefined> {
  const intake = await findIntakeById(services.db.kysely, id);
  if (!intake || intake.status === 'draft') return undefined;
  return accountLogo(services.db.kysely, intake.account_id);
}

export type FormOutcome =
  | { ok: true; notice: 'saved' | 'submitted' | 'removed' | 'uploaded' }
  | { ok: false; status: number; error: CardError };

function cardError(message: string, draft: FormFields, fields = new Map<string, string>()): CardError {
  return { message, draft, fields };
}

async function attempt(
  model: PageModel,
  item: ViewItem,
  draft: FormFields,
  work: () => Promise<unknown>,
): Promise<FormOutcome | undefined> {
  try {
    await work();
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    const message = apiErrorMessage(model.t, model.language, item, error, effectiveMaxBytes(item, model));
    return { ok: false, status: error.status, error: cardError(message, draft) };
  }
}

/**
 * A card's form, posted without the page script or by it: saves the value (action=save) or saves
 * and submits it (action=submit). Structured values are checked field by field first, so each
 * error lands next to its field.
 */
export async function postItemForm(
  services: AppServices,
  model: PageModel,
  key: string,
  form: FormFields,
): Promise<FormOutcome> {
  const item = model.view.items.find((i) => i.key === key);
  if (!item) throw new ApiError('not_found', `This intake has no item ${key}.`);
  const id = model.view.intake_id;
  const submit = form.action === 'submit';
  const { t } = model;
  if (!isFileType(item.type)) {
    const parsed = valueFromItemForm(item, form);
    if (parsed.kind === 'invalid') {
      return { ok: false, status: 422, error: cardError(t(`error.${parsed.constraint}`), form) };
    }
    if (submit && item.type === 'structured' && item.schema && parsed.kind === 'value') {
      // Under the time budget: a costly value is checked in a worker (lib/schema-budget.ts).
      const issues = await services.schemaChecks.issues(item.schema, parsed.value);
      if (issues.length > 0) {
        // Keep what is there as a draft, then show each problem next to its field.
        await saveValue(services, id, key, parsed.value).catch(() => undefined);
        const fields = fieldErrors(t, issues);
        // A problem of the value as a whole (too large or too costly to check, the wrong kind) has
        // no field to stand next to, and a JSON text area has no fields at all: the card says it.
        return {
          ok: false,
          status: 422,
          error: cardError(fields.get('') ?? t('error.fix_fields'), form, fields),
        };
      }
    }
    if (parsed.kind === 'value') {
      const failed = await attempt(model, item, form, () => saveValue(services, id, key, parsed.value));
      if (failed) return failed;
    }
  }
  if (!submit) return { ok: true, notice: 'saved' };
  const failed = await attempt(model, item, form, () => submitItem(services, id, key));
  if (failed) return failed;
  return { ok: true, notice: 'submitted' };
}

export async function postRemoveFile(
  services: AppServices,
  model: PageModel,
  key: string,
  fileId: string,
): Promise<FormOutcome> {
  const item = model.view.items.find((i) => i.key === key);
  if (!item) throw new ApiError('not_found', `This intake has no item ${key}.`);
  const failed = await attempt(model, item, {}, () =>
    removeFile(services, model.view.intake_id, key, fileId),
  );
  return failed ?? { ok: true, notice: 'removed' };
}

/**
 * The page's one send (POST /portal/:id/submit): every saved, unsent answer goes. Each answer held
 * back for breaking a constraint gets its reason next to it, in the page's language.
 */
export async function postSendAll(
  services: AppServices,
  model: PageModel,
): Promise<{ submitted: string[]; errors: Map<string, CardError> }> {
  const result = await submitAll(services, model.view.intake_id);
  const errors = new Map<string, CardError>();
  for (const { item_key: key, message } of result.invalid) {
    const item = model.view.items.find((i) => i.key === key);
    if (!item) continue;
    const text = clientErrorMessage(
      model.t,
      model.language,
      item,
      'unprocessable',
      message,
      effectiveMaxBytes(item, model),
    );
    errors.set(key, cardError(text, {}));
  }
  return { submitted: result.submitted, errors };
}

/** An upload error said in the page's language, for the tus and form upload paths. */
export function uploadErrorMessage(model: PageModel, key: string, error: ApiError): string {
  const item = model.view.items.find((i) => i.key === key);
  if (!item) return model.t('error.not_found');
  return clientErrorMessage(
    model.t,
    model.language,
    item,
    error.code,
    error.message,
    effectiveMaxBytes(item, model),
  );
}
