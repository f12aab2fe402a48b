import { examplePhone } from '../../../domain/phone.js';
import { attr, flag, html, type Html } from './html.js';
import type { CardError, PageModel, ViewItem } from './model.js';
import { formatPhone } from './format.js';
import { renderSchemaFields, schemaFields, type FormFields } from './schema-form.js';

/**
 * The input of a value item, by type. Every control posts as a plain form (it works before any script
 * runs); the page script adds autosave, the character count and error messages in the page's language.
 */
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function savedText(item: ViewItem): string {
  const v = item.value;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return '';
}

function describedBy(item: ViewItem, error: CardError | undefined, extra: string[] = []): Html {
  const ids = [...extra];
  if (item.help) ids.push(`item-${item.key}-help`);
  ids.push(`item-${item.key}-rules`);
  if (error) ids.push(`item-${item.key}-error`);
  return attr('aria-describedby', ids.join(' '));
}

export function valueControl(
  item: ViewItem,
  m: PageModel,
  error: CardError | undefined,
  disabled: boolean,
): Html {
  const { t } = m;
  const id = `item-${item.key}-input`;
  const c = item.constraints;
  const draft: FormFields | undefined = error?.draft;
  const text = draft ? (first(draft.value) ?? '') : savedText(item);
  // The sender's example answer shows the expected form before anything is typed (and in errors).
  const common = html`id="${id}"
  name="value"${flag('disabled', disabled)}${attr('aria-invalid', error ? 'true' : undefined)}${describedBy(item, error)}${attr('data-example', item.example)}`;
  const placeholder = (fallback?: string) => attr('placeholder', item.example ?? fallback);
  const label = html`<label class="visually-hidden" for="${id}">${item.label}</label>`;
  switch (item.type) {
    case 'text':
    case 'longtext': {
      const counter = c.max_chars
        ? html`<p class="counter" id="${id}-count" data-max="${c.max_chars}" aria-live="polite" hidden></p>`
        : '';
      const input =
        item.type === 'longtext'
          ? html`<textarea
              ${common}
              rows="6"
              data-autosave="text"
              ${attr('data-max-chars', c.max_chars)}${placeholder()}
            >
${text}</textarea>`
          : html`<input
              type="text"
              ${common}
              value="${text}"
              data-autosave="text"
              ${attr('data-max-chars', c.max_chars)}${attr('pattern', c.pattern)}${placeholder()}
            />`;
      return html`${label}${input}${counter}`;
    }
    case 'secret': {
      const saved = item.secret_saved
        ? html`<p class="secret-saved" id="${id}-saved">${t('secret.saved')}</p>`
        : '';
      return html`${saved}<label for="${id}"
          >${item.secret_saved ? t('secret.replace') : t('secret.enter')}</label
        >
        <div class="secret-row">
          <input
            type="password"
            ${common}
            value=""
            autocomplete="new-password"
            autocapitalize="off"
            spellcheck="false"
            data-autosave="secret"
          /><button type="button" class="secondary reveal" aria-pressed="false" aria-controls="${id}" hidden>
            ${t('secret.show')}
          </button>
        </div>`;
    }
    // A text field, not type=url: "example.com" is a fine answer (the server adds https://), and
    // the browser's url check would refuse it.
    case 'url':
      return html`${label}<input
          type="text"
          inputmode="url"
          ${common}
          value="${text}"
          ${placeholder('www.example.com')}
          autocomplete="url"
          autocapitalize="off"
          spellcheck="false"
          data-autosave="change"
        />`;
    case 'email':
      return html`${label}<input
          type="email"
          ${common}
          value="${text}"
          ${placeholder()}
          autocomplete="email"
          data-autosave="change"
        />`;
    case 'phone':
      return html`${label}<input
          type="tel"
          ${common}
          value="${draft ? text : text && formatPhone(text, m.country)}"
          ${placeholder(examplePhone(m.country) ?? '+44 20 7946 0958')}
          autocomplete="tel"
          data-autosave="change"
        />`;
    case 'date':
      return html`${label}<input
          type="date"
          ${common}
          value="${text}"
          ${attr('min', c.min_date)}${attr('max', c.max_date)}
          data-autosave="change"
        />`;
    case 'number':
      return html`${label}<input
          type="number"
          ${common}
          value="${text}"
          inputmode="${c.integer ? 'numeric' : 'decimal'}"
          step="${c.integer ? '1' : 'any'}"
          ${attr('min', c.min)}${attr('max', c.max)}
          data-autosave="change"
        />`;
    case 'boolean': {
      const current = draft ? first(draft.value) : savedText(item);
      return html`<div class="choices" role="radiogroup" aria-labelledby="item-${item.key}-title">
        ${[
          ['true', t('yes')],
          ['false', t('no')],
        ].map(
          ([value, text2]) =>
            html`<label class="choice"
              ><input
                type="radio"
                name="value"
                value="${value}"
                ${flag('checked', current === value)}${flag('disabled', disabled)}
                data-autosave="change"
              />
              <span>${text2}</span></label
            >`,
        )}
      </div>`;
    }
    case 'select':
    case 'multiselect': {
      const chosen = draft
        ? list(draft.value)
        : Array.isArray(item.value)
          ? item.value.map(String)
          : typeof item.value === 'string'
            ? [item.value]
            : [];
      const options = item.options ?? [];
      const multi = item.type === 'multiselect';
      if (!multi && options.length > 6) {
        return html`${label}<select ${common} data-autosave="change">
            <option value="">${t('choose')}</option>
            ${options.map(
              (o) =>
                html`<option value="${o.value}" ${flag('selected', chosen.includes(o.value))}>
                  ${o.label}
                </option>`,
            )}
          </select>`;
      }
      return html`<div
        class="choices"
        ${attr('role', multi ? 'group' : 'radiogroup')}
        aria-labelledby="item-${item.key}-title"
      >
        ${options.map(
          (o) =>
            html`<label class="choice"
              ><input
                type="${multi ? 'checkbox' : 'radio'}"
                name="value"
                value="${o.value}"
                ${flag('checked', chosen.includes(o.value))}${flag('disabled', disabled)}
                data-autosave="change"
              />
              <span>${o.label}</span></label
            >`,
        )}
      </div>`;
    }
    case 'color_list': {
      const colours = draft ? list(draft.value) : Array.isArray(item.value) ? item.value.map(String) : [];
      const max = c.max_count ?? 12;
      const rows = Math.min(max, Math.max(colours.length + 1, c.min_count ?? 1));
      return html`<div class="colours" data-max="${max}">
        ${Array.from({ length: rows }, (_, i) => {
          const value = colours[i] ?? '';
          return html`<div class="colour-row">
            <label for="${id}-${i}">${t('colour_n', { n: i + 1 })}</label
            ><input
              type="text"
              id="${id}-${i}"
              name="value"
              value="${value}"
              placeholder="#1a2b3c"
              pattern="#?[0-9A-Fa-f]{3}([0-9A-Fa-f]{3})?"
              autocapitalize="off"
              spellcheck="false"
              ${flag('disabled', disabled)}
              data-autosave="change"
            />
          </div>`;
        })}
      </div>`;
    }
    case 'structured': {
      const fields = schemaFields(item.schema);
      const value = draft ? undefined : item.value;
      if (!fields) {
        const json = draft
          ? (first(draft.json) ?? '')
          : item.value === null
            ? ''
            : JSON.stringify(item.value, null, 2);
        return html`<label for="${id}">${t('structured.json')}</label
          ><textarea
            id="${id}"
            name="json"
            rows="8"
            spellcheck="false"
            ${flag('disabled', disabled)}${describedBy(item, error)}
            data-autosave="change"
          >
${json}</textarea>`;
      }
      const fromDraft = draft ? draftObject(draft) : value;
      return html`<div class="schema-form">
        ${renderSchemaFields(fields, {
          t,
          idPrefix: `item-${item.key}`,
          value: fromDraft,
          errors: error?.fields ?? new Map<string, string>(),
          disabled,
        })}
      </div>`;
    }
    default:
      return html`${label}<input type="text" ${common} value="${text}" data-autosave="change" />`;
  }
}

/** A posted structured form as a nested object of strings, to show it again after an error. */
function draftObject(draft: FormFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(draft)) {
    if (!name.startsWith('s.') || value === undefined) continue;
    const parts = name.slice(2).split('.');
    let node = out;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) {
        node[part] = Array.isArray(value)
          ? value
          : value === 'true'
            ? true
            : value === 'false'
              ? false
              : value;
      } else {
        const next = node[part];
        node = (typeof next === 'object' && next !== null ? next : (node[part] = {})) as Record<
          string,
          unknown
        >;
      }
    });
  }
  return out;
}
