import { formatDate, formatList, formatNumber, formatPhone } from './format.js';
import { html, type Html } from './html.js';
import type { PageModel, ViewItem } from './model.js';
import { schemaFields, type SchemaField } from './schema-form.js';

/** Saved answers shown read-only (accepted items, closed requests), written as people write them. */

/** A colour sample as SVG: a presentation attribute, so the strict CSP (no inline styles) allows it. */
export function swatch(colour: string): Html {
  const fill = /^#[0-9a-fA-F]{3,6}$/.test(colour) ? colour : '#ffffff';
  return html`<svg class="swatch" width="20" height="20" viewBox="0 0 20 20" aria-hidden="true">
    <rect x="0.5" y="0.5" width="19" height="19" rx="4" fill="${fill}" stroke="#767676" />
  </svg>`;
}

/** One value of a structured answer in words: Yes/No, local numbers and dates, lists. */
function fieldValue(value: unknown, field: SchemaField | undefined, m: PageModel): Html | string {
  if (value === null || value === undefined || value === '') return m.t('empty');
  if (typeof value === 'boolean') return value ? m.t('yes') : m.t('no');
  if (typeof value === 'number') return formatNumber(m.language, value);
  if (typeof value === 'string')
    return field?.kind === 'date' && /^\d{4}-\d{2}-\d{2}$/.test(value)
      ? formatDate(m.language, value)
      : value;
  if (Array.isArray(value))
    return formatList(
      m.language,
      value.map((v) => String(fieldValue(v, undefined, m))),
      'conjunction',
    );
  if (typeof value === 'object')
    return objectDisplay(value as Record<string, unknown>, field?.children ?? [], m);
  return JSON.stringify(value);
}

function objectDisplay(value: Record<string, unknown>, fields: SchemaField[], m: PageModel): Html {
  // Field names as the form showed them (the schema's titles), not the raw keys.
  const byKey = new Map(fields.map((f) => [f.path.split('.').pop() ?? f.path, f]));
  return html`<dl class="value-object">
    ${Object.entries(value).map(([key, x]) => {
      const field = byKey.get(key);
      return html`<div class="value-pair">
        <dt>${field?.label ?? key}</dt>
        <dd>${fieldValue(x, field, m)}</dd>
      </div>`;
    })}
  </dl>`;
}

/** A saved value shown read-only (accepted items, closed requests), as people write it. */
export function valueDisplay(item: ViewItem, m: PageModel): Html {
  const { t } = m;
  if (item.type === 'secret')
    return html`<p class="secret-saved">${item.secret_saved ? t('secret.saved') : t('empty')}</p>`;
  const v = item.value;
  if (v === null || v === undefined || v === '') return html`<p class="muted">${t('empty')}</p>`;
  if (item.type === 'boolean') return html`<p class="value">${v === true ? t('yes') : t('no')}</p>`;
  if (item.type === 'select' || item.type === 'multiselect') {
    const labels = (Array.isArray(v) ? v : [v]).map(
      (x) => item.options?.find((o) => o.value === x)?.label ?? String(x),
    );
    return item.type === 'select'
      ? html`<p class="value">${labels[0] ?? ''}</p>`
      : html`<ul class="value-list">
          ${labels.map((l) => html`<li>${l}</li>`)}
        </ul>`;
  }
  if (item.type === 'color_list' && Array.isArray(v)) {
    return html`<ul class="value-list swatches">
      ${v.map((c) => html`<li>${swatch(String(c))}${String(c)}</li>`)}
    </ul>`;
  }
  if (item.type === 'phone' && typeof v === 'string')
    return html`<p class="value">${formatPhone(v, m.country)}</p>`;
  if (item.type === 'date' && typeof v === 'string')
    return html`<p class="value">${formatDate(m.language, v)}</p>`;
  if (item.type === 'number' && typeof v === 'number')
    return html`<p class="value">${formatNumber(m.language, v)}</p>`;
  if (typeof v === 'object' && !Array.isArray(v))
    return objectDisplay(v as Record<string, unknown>, schemaFields(item.schema) ?? [], m);
  return html`<p class="value">${typeof v === 'string' ? v : JSON.stringify(v)}</p>`;
}
