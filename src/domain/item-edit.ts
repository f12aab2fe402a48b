import { FORMATS, isFileType, type Format, type ItemDefinition } from './items.js';
import { checkDraftValue, checkFile, checkSubmission, isEmptyValue, type SchemaValidator } from './values.js';

/**
 * Editing an item after sending (PATCH /v1/intakes/:id/items/:key): would the client's answer
 * still be valid under the new definition? If not, the change needs `discard_submitted_value: true`.
 */
export interface StoredAnswer {
  status: string;
  /** Parsed value_json (value kinds), undefined when none is saved. */
  value: unknown;
  /** Secret items: whether a (sealed) value is saved; its text is never looked at. */
  secretSaved: boolean;
  files: readonly { content_type: string; size: number; width: number | null; height: number | null }[];
}

export function hasAnswer(answer: StoredAnswer): boolean {
  return answer.value !== undefined || answer.secretSaved || answer.files.length > 0;
}

function formatOf(contentType: string): Format | undefined {
  const entry = Object.entries(FORMATS).find(([, types]) =>
    (types as readonly string[]).includes(contentType),
  );
  return entry?.[0] as Format | undefined;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * Why the stored answer would not survive the new definition (undefined: it would). Submitted and
 * approved answers must still pass submission; drafts only the draft checks.
 */
export function answerLostBy(
  before: ItemDefinition,
  after: ItemDefinition,
  answer: StoredAnswer,
  validateSchema: SchemaValidator,
): string | undefined {
  if (!hasAnswer(answer)) return undefined;
  if (before.type !== after.type) return `the type changes from ${before.type} to ${after.type}`;
  const submitted = answer.status !== 'pending';
  if (after.type === 'secret') {
    // The sealed value is not opened to check it: any change of its rules counts as losing it.
    return sameJson(before.constraints, after.constraints) ? undefined : 'the secret’s constraints change';
  }
  if (isFileType(after.type)) {
    for (let i = 0; i < answer.files.length; i++) {
      const file = answer.files[i];
      if (!file) continue;
      const facts = {
        format: formatOf(file.content_type),
        contentType: file.content_type,
        bytes: file.size,
        width: file.width ?? undefined,
        height: file.height ?? undefined,
        // Transparency was checked at upload only if asked for then; unknown otherwise.
        transparent: before.constraints.transparent_background ? true : undefined,
      };
      const checked = checkFile(after, facts, i);
      if (!checked.ok) return `${checked.constraint}: ${checked.message}`;
    }
    if (submitted) {
      const checked = checkSubmission(
        after,
        { value: undefined, fileCount: answer.files.length },
        validateSchema,
      );
      if (!checked.ok) return `${checked.constraint}: ${checked.message}`;
    }
    return undefined;
  }
  // An empty answer submitted before empty submissions were refused is judged like a draft.
  const checked =
    submitted && !isEmptyValue(answer.value)
      ? checkSubmission(after, { value: answer.value, fileCount: 0 }, validateSchema)
      : checkDraftValue(after, answer.value, validateSchema);
  return checked.ok ? undefined : `${checked.constraint}: ${checked.message}`;
}
