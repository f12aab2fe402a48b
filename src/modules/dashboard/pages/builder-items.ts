import {
  FIELD_KINDS,
  TEXT_FORMAT_NAMES,
  presetsFor,
  FILE_PRESET_NAMES,
  FILE_PRESETS,
} from '../../../domain/builder.js';
import { FORMATS, IMAGE_FORMATS, ITEM_TYPES, type ItemType } from '../../../domain/items.js';
import { attr, flag, html, raw, type Html } from '../../portal/page/html.js';
import { emptyField, emptyRow, type FieldFormRow, type ItemFormRow } from '../item-form.js';
import type { Chrome } from '../layout.js';

/**
 * The builder's item card: a label, a kind of answer by its human name, and only the constraints
 * that kind takes. Every group of constraints is on the page under a heading that names the kinds
 * it is for; the script shows only the chosen kind's groups (and fills presets, adds cards and
 * fields). The key is made from the label and stays under "Advanced".
 */

const svg = (body: string) =>
  raw(
    `<svg class="icon" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">${body}</svg>`,
  );

/** Each item type: its human name (English default of builder.type.<type>) and its icon. */
export const TYPE_CATALOG: Record<ItemType, { name: string; icon: Html; group: string }> = {
  image: {
    name: 'Image or logo',
    group: 'files',
    icon: svg(
      '<rect x="3" y="4" width="18" height="16" rx="2"/><circle cx="9" cy="10" r="2"/><path d="m21 16-5-5-9 9"/>',
    ),
  },
  file: { name: 'One file', group: 'files', icon: svg('<path d="M14 3H6v18h12V7z"/><path d="M14 3v4h4"/>') },
  file_list: {
    name: 'Several files',
    group: 'files',
    icon: svg('<path d="M15 3H8v14h11V7z"/><path d="M15 3v4h4"/><path d="M5 7v14h11"/>'),
  },
  text: { name: 'Short text', group: 'text', icon: svg('<path d="M4 7V5h16v2M12 5v14M9 19h6"/>') },
  longtext: { name: 'Long text', group: 'text', icon: svg('<path d="M4 6h16M4 10h16M4 14h16M4 18h10"/>') },
  secret: {
    name: 'Password or secret',
    group: 'text',
    icon: svg('<rect x="5" y="11" width="14" height="10" rx="2"/><path d="M8 11V7a4 4 0 0 1 8 0v4"/>'),
  },
  url: {
    name: 'Web address',
    group: 'text',
    icon: svg(
      '<path d="M10 14a4 4 0 0 0 6 0l3-3a4 4 0 0 0-6-6l-1 1"/><path d="M14 10a4 4 0 0 0-6 0l-3 3a4 4 0 0 0 6 6l1-1"/>',
    ),
  },
  email: {
    name: 'Email address',
    group: 'text',
    icon: svg('<rect x="3" y="5" width="18" height="14" rx="2"/><path d="m3 7 9 6 9-6"/>'),
  },
  phone: {
    name: 'Phone number',
    group: 'text',
    icon: svg(
      '<path d="M5 4h4l2 5-2.5 1.5a11 11 0 0 0 5 5L15 13l5 2v4a2 2 0 0 1-2 2A16 16 0 0 1 3 6a2 2 0 0 1 2-2"/>',
    ),
  },
  date: {
    name: 'Date',
    group: 'other',
    icon: svg('<rect x="3" y="5" width="18" height="16" rx="2"/><path d="M3 10h18M8 3v4M16 3v4"/>'),
  },
  number: { name: 'Number', group: 'other', icon: svg('<path d="M9 4 7 20M17 4l-2 16M4 9h16M3 15h16"/>') },
  boolean: {
    name: 'Yes or no',
    group: 'choices',
    icon: svg('<rect x="2" y="7" width="20" height="10" rx="5"/><circle cx="16" cy="12" r="3"/>'),
  },
  select: {
    name: 'One choice',
    group: 'choices',
    icon: svg('<circle cx="12" cy="12" r="9"/><circle cx="12" cy="12" r="4"/>'),
  },
  multiselect: {
    name: 'Several choices',
    group: 'choices',
    icon: svg('<rect x="3" y="3" width="18" height="18" rx="3"/><path d="m8 12 3 3 5-6"/>'),
  },
  color_list: {
    name: 'Colours',
    group: 'other',
    icon: svg(
      '<path d="M12 3a9 9 0 1 0 0 18c1 0 2-1 1.5-2s0-2 1.5-2H18a3 3 0 0 0 3-3 9 9 0 0 0-9-8z"/><circle cx="8" cy="10" r="1"/><circle cx="12" cy="7" r="1"/><circle cx="16" cy="10" r="1"/>',
    ),
  },
  structured: {
    name: 'Form with several fields',
    group: 'other',
    icon: svg(
      '<rect x="3" y="4" width="18" height="16" rx="2"/><path d="M7 9h4M7 13h4M7 17h4M14 9h3M14 13h3M14 17h3"/>',
    ),
  },
};

const GROUPS = [
  ['files', 'Files'],
  ['text', 'Text'],
  ['choices', 'Choices'],
  ['other', 'More'],
] as const;

export function typeName(chrome: Pick<Chrome, 't'>, type: string): string {
  const entry = (TYPE_CATALOG as Record<string, { name: string } | undefined>)[type];
  return entry ? chrome.t(`builder.type.${type}`, entry.name) : type;
}

export function typeIcon(type: string): Html {
  return (TYPE_CATALOG as Record<string, { icon: Html } | undefined>)[type]?.icon ?? TYPE_CATALOG.text.icon;
}

const FORMAT_NAMES: Record<string, string> = {
  png: 'PNG',
  jpg: 'JPEG',
  svg: 'SVG',
  heic: 'HEIC (iPhone)',
  webp: 'WebP',
  gif: 'GIF',
  pdf: 'PDF',
  docx: 'Word',
  xlsx: 'Excel',
  pptx: 'PowerPoint',
  zip: 'ZIP',
  txt: 'Plain text',
  csv: 'CSV',
  mp4: 'MP4 video',
  mov: 'QuickTime video',
  mp3: 'MP3 audio',
};

/** The path a form posts back to without script (add, remove, add a field), or false. */
export type RoundTrip = string | false;

/** How a card's inputs are named and identified: items[<n>][field] and item-<prefix><n>-field. */
export interface CardNaming {
  index: number | string;
  /** Distinguishes cards of several forms on one page (the edit page): "" on the builder. */
  idPrefix: string;
}

function names(naming: CardNaming) {
  const n = (f: string) => `items[${naming.index}][${f}]`;
  const id = (f: string) => `item-${naming.idPrefix}${naming.index}-${f}`;
  return { n, id };
}

function numberField(
  name: string,
  id: string,
  label: string,
  value: string,
  types: string,
  hint?: string,
): Html {
  return html`<div data-types="${types}">
    <label for="${id}">${label}</label>
    <input
      type="number"
      id="${id}"
      name="${name}"
      value="${value}"
      step="any"
      min="0"
      inputmode="decimal"
      ${attr('aria-describedby', hint ? `${id}-hint` : null)}
    />
    ${hint ? html`<small class="muted" id="${id}-hint">${hint}</small>` : null}
  </div>`;
}

/** A group of constraint fields for some types; headed by those types' names (visible without script). */
function group(chrome: Chrome, types: readonly ItemType[], title: string, body: Html): Html {
  const forTypes = types.map((type) => typeName(chrome, type)).join(', ');
  return html`<div class="constraint-group" data-types="${types.join(' ')}">
    <h4>
      ${title}
      <span class="muted for-types"
        >(${chrome.t('builder.for_types', 'for: {{types}}', { types: forTypes })})</span
      >
    </h4>
    ${body}
  </div>`;
}

function fileGroup(chrome: Chrome, naming: CardNaming, row: ItemFormRow): Html {
  const { t } = chrome;
  const { n, id } = names(naming);
  const chosen = new Set(
    row.formats
      .split(/[\s,]+/)
      .map((f) => f.trim().toLowerCase())
      .filter(Boolean),
  );
  const imageOnly = new Set<string>(IMAGE_FORMATS);
  return group(
    chrome,
    ['image', 'file', 'file_list'],
    t('builder.group.files', 'Which files'),
    html`<label for="${id('preset')}">${t('builder.preset', 'Start from a preset')}</label>
      <select id="${id('preset')}" name="${n('preset')}" data-preset aria-describedby="${id('preset')}-hint">
        <option value="">${t('builder.preset_none', 'No preset: choose below')}</option>
        ${FILE_PRESET_NAMES.map(
          (name) =>
            html`<option
              value="${name}"
              data-preset-type="${FILE_PRESETS[name].type}"
              data-formats="${FILE_PRESETS[name].constraints.formats.join(' ')}"
              data-min-width="${'min_width' in FILE_PRESETS[name].constraints ? FILE_PRESETS[name].constraints.min_width : ''}"
              data-transparent="${'transparent_background' in FILE_PRESETS[name].constraints ? 'true' : ''}"
              data-types="${presetsFor('image').includes(name) ? 'image file file_list' : 'file file_list'}"
              ${flag('selected', row.preset === name)}
            >
              ${t(`builder.presets.${name}`, PRESET_NAMES[name] ?? name)}
            </option>`,
        )}
      </select>
      <small class="muted" id="${id('preset')}-hint"
        >${t('builder.preset_hint', 'A preset fills in the formats and the size below; you can change them.')}</small
      >
      <fieldset class="formats">
        <legend>${t('builder.formats', 'Accepted formats (none ticked: any)')}</legend>
        ${Object.keys(FORMATS).map(
          (format) =>
            html`<label
              class="inline"
              data-types="${imageOnly.has(format) ? 'image file file_list' : 'file file_list'}"
              ><input
                type="checkbox"
                name="${n('formats')}"
                value="${format}"
                ${flag('checked', chosen.has(format))}
              />
              ${t(`builder.format_names.${format}`, FORMAT_NAMES[format] ?? format)}</label
            >`,
        )}
      </fieldset>
      <div class="grid">
        ${numberField(n('max_mb'), id('max_mb'), t('builder.max_mb', 'Largest file (MB)'), row.max_mb, 'image file file_list')}
        ${numberField(n('min_width'), id('min_width'), t('builder.min_width', 'At least this wide (pixels)'), row.min_width, 'image file file_list')}
        ${numberField(n('min_height'), id('min_height'), t('builder.min_height', 'At least this tall (pixels)'), row.min_height, 'image file file_list')}
      </div>
      <label class="inline" data-types="image file file_list"
        ><input
          type="checkbox"
          name="${n('transparent_background')}"
          ${flag('checked', row.transparent_background)}
        />
        ${t('builder.transparent', 'Transparent background (for logos)')}</label
      >`,
  );
}

const PRESET_NAMES: Record<string, string> = {
  logo: 'Logo: SVG or PNG, at least 1000 px wide',
  logo_transparent: 'Logo: SVG or PNG, 1000 px, transparent background',
  photo: 'Photo: JPEG or PNG',
  print_photo: 'Photo for print: JPEG or PNG, at least 3000 px wide',
  document: 'Document: PDF',
  office: 'Office document: PDF, Word, Excel or PowerPoint',
  spreadsheet: 'Spreadsheet: Excel or CSV',
  video: 'Video: MP4 or QuickTime',
};

const TEXT_FORMAT_WORDS: Record<string, string> = {
  any: 'Anything',
  digits: 'Digits only',
  letters: 'Letters only',
  letters_digits: 'Letters and digits',
  postcode_de: 'Postcode (Germany, 5 digits)',
  postcode_uk: 'Postcode (United Kingdom)',
  zip_us: 'ZIP code (United States)',
  vat_eu: 'VAT number (EU, e.g. DE123456789)',
  iban: 'IBAN (bank account)',
  custom: 'A custom format set through the API (kept)',
};

const FIELD_KIND_WORDS: Record<string, string> = {
  text: 'Short text',
  longtext: 'Long text',
  email: 'Email address',
  url: 'Web address',
  date: 'Date',
  number: 'Number',
  integer: 'Whole number',
  boolean: 'Yes or no',
  choice: 'One choice',
  choices: 'Several choices',
};

function structuredField(chrome: Chrome, naming: CardNaming, m: number, field: FieldFormRow): Html {
  const { t } = chrome;
  const { n, id } = names(naming);
  const fn = (part: string) => `${n('fields')}[${m}][${part}]`;
  const fid = (part: string) => `${id('fields')}-${m}-${part}`;
  return html`<div class="field-row" data-field-row>
    <div>
      <label for="${fid('label')}">${t('builder.field_label', 'Field name')}</label>
      <input type="text" id="${fid('label')}" name="${fn('label')}" value="${field.label}" maxlength="200" />
    </div>
    <div>
      <label for="${fid('kind')}">${t('builder.field_kind', 'Kind')}</label>
      <select id="${fid('kind')}" name="${fn('kind')}">
        ${FIELD_KINDS.map((kind) => html`<option value="${kind}" ${flag('selected', field.kind === kind)}>${t(`builder.field_kinds.${kind}`, FIELD_KIND_WORDS[kind] ?? kind)}</option>`)}
      </select>
    </div>
    <div data-field-options>
      <label for="${fid('options')}">${t('builder.field_options', 'Choices (one per line)')}</label>
      <textarea id="${fid('options')}" name="${fn('options')}" rows="2">${field.options}</textarea>
    </div>
    <label class="inline"
      ><input type="checkbox" name="${fn('required')}" ${flag('checked', field.required)} />
      ${t('builder.field_required', 'Required')}</label
    >
  </div>`;
}

function structuredGroup(chrome: Chrome, naming: CardNaming, row: ItemFormRow, roundTrip: RoundTrip): Html {
  const { t } = chrome;
  const { n } = names(naming);
  const fields = row.fields.length > 0 ? [...row.fields, emptyField()] : [emptyField(), emptyField()];
  return group(
    chrome,
    ['structured'],
    t('builder.group.fields', 'The fields of the form'),
    html`${
        row.schema
          ? html`<p class="muted">
                ${t('builder.schema_kept', 'This form’s fields were set through the API and are kept as they are. Add fields below to replace them.')}
              </p>
              <input type="hidden" name="${n('schema')}" value="${row.schema}" />`
          : null
      }
      <div class="fields" data-fields>
        ${fields.map((field, m) => structuredField(chrome, naming, m, field))}
      </div>
      <button
        type="${roundTrip ? 'submit' : 'button'}"
        class="secondary"
        name="intent"
        value="field:${naming.index}"
        formnovalidate
        ${attr('formaction', roundTrip ? `${roundTrip}#item-card-${naming.idPrefix}${naming.index}` : null)}
        data-add-field
        ${flag('hidden', !roundTrip)}
      >
        ${t('builder.add_field', 'Add a field')}
      </button>`,
  );
}

function textFormatGroup(chrome: Chrome, naming: CardNaming, row: ItemFormRow): Html {
  const { t } = chrome;
  const { n, id } = names(naming);
  const choices = ['any', ...TEXT_FORMAT_NAMES, ...(row.text_format === 'custom' ? ['custom'] : [])];
  const current = row.text_format === '' ? (row.pattern ? 'custom' : 'any') : row.text_format;
  return group(
    chrome,
    ['text'],
    t('builder.group.format', 'What the answer looks like'),
    html`<label for="${id('text_format')}">${t('builder.text_format', 'Format')}</label>
      <select id="${id('text_format')}" name="${n('text_format')}">
        ${choices.map((c) => html`<option value="${c}" ${flag('selected', current === c)}>${t(`builder.text_formats.${c}`, TEXT_FORMAT_WORDS[c] ?? c)}</option>`)}
      </select>
      ${row.pattern ? html`<input type="hidden" name="${n('pattern')}" value="${row.pattern}" />` : null}`,
  );
}

/** The constraint groups, each field once, for every type (the script shows the chosen type's). */
function constraintGroups(chrome: Chrome, naming: CardNaming, row: ItemFormRow, roundTrip: RoundTrip): Html {
  const { t } = chrome;
  const { n, id } = names(naming);
  return html`${fileGroup(chrome, naming, row)}
  ${group(
    chrome,
    ['file_list', 'multiselect', 'color_list'],
    t('builder.group.count', 'How many'),
    html`<div class="grid">
      ${numberField(n('min_count'), id('min_count'), t('builder.min_count', 'At least'), row.min_count, 'file_list multiselect color_list')}
      ${numberField(n('max_count'), id('max_count'), t('builder.max_count', 'At most'), row.max_count, 'file_list multiselect color_list')}
    </div>`,
  )}
  ${textFormatGroup(chrome, naming, row)}
  ${group(
    chrome,
    ['text', 'longtext', 'secret', 'url'],
    t('builder.group.length', 'Length'),
    html`<div class="grid">
      ${numberField(n('min_chars'), id('min_chars'), t('builder.min_chars', 'At least (characters)'), row.min_chars, 'text longtext secret')}
      ${numberField(n('max_chars'), id('max_chars'), t('builder.max_chars', 'At most (characters)'), row.max_chars, 'text longtext secret url')}
    </div>`,
  )}
  ${group(
    chrome,
    ['number'],
    t('builder.group.number', 'Which numbers'),
    html`<div class="grid">
        ${numberField(n('min'), id('min'), t('builder.min', 'Smallest'), row.min, 'number')}
        ${numberField(n('max'), id('max'), t('builder.max', 'Largest'), row.max, 'number')}
      </div>
      <label class="inline"
        ><input type="checkbox" name="${n('integer')}" ${flag('checked', row.integer)} />
        ${t('builder.integer', 'Whole numbers only')}</label
      >`,
  )}
  ${group(
    chrome,
    ['date'],
    t('builder.group.date', 'Which dates'),
    html`<div class="grid">
      <div>
        <label for="${id('min_date')}">${t('builder.min_date', 'Not before')}</label>
        <input type="date" id="${id('min_date')}" name="${n('min_date')}" value="${row.min_date}" />
      </div>
      <div>
        <label for="${id('max_date')}">${t('builder.max_date', 'Not after')}</label>
        <input type="date" id="${id('max_date')}" name="${n('max_date')}" value="${row.max_date}" />
      </div>
    </div>`,
  )}
  ${group(
    chrome,
    ['select', 'multiselect'],
    t('builder.group.choices', 'The choices'),
    html`<label for="${id('options')}">${t('builder.options', 'One choice per line')}</label>
      <textarea id="${id('options')}" name="${n('options')}" rows="3">${row.options}</textarea>`,
  )}
  ${structuredGroup(chrome, naming, row, roundTrip)}`;
}

export interface CardOptions {
  /** Without script, buttons post the form back to this path to re-render it; false: script only. */
  roundTrip: RoundTrip;
  /** An existing item's key is fixed (it names the answer in results). */
  keyFixed?: boolean;
  /** The card's own actions (remove…), after its fields. */
  actions?: Html;
  legend?: string;
}

/** One item card. */
export function itemCard(chrome: Chrome, naming: CardNaming, row: ItemFormRow, options: CardOptions): Html {
  const { t } = chrome;
  const { n, id } = names(naming);
  const number = typeof naming.index === 'number' ? naming.index + 1 : '';
  return html`<fieldset
    class="item-row item-card"
    id="item-card-${naming.idPrefix}${naming.index}"
    data-item-card
    data-type="${row.type}"
  >
    <legend>
      <span class="type-icon" data-type-icon>${typeIcon(row.type)}</span>
      <span data-item-legend>${options.legend ?? t('builder.item_n', 'Item {{n}}', { n: number })}</span>
    </legend>
    <div class="grid">
      <div>
        <label for="${id('label')}">${t('builder.label', 'What to ask for')}</label>
        <input
          type="text"
          id="${id('label')}"
          name="${n('label')}"
          value="${row.label}"
          maxlength="200"
          data-label
        />
      </div>
      <div>
        <label for="${id('type')}">${t('builder.type_label', 'Kind of answer')}</label>
        <select id="${id('type')}" name="${n('type')}" data-type-select>
          ${GROUPS.map(
            ([groupId, groupName]) =>
              html`<optgroup label="${t(`builder.type_group.${groupId}`, groupName)}">
                ${ITEM_TYPES.filter((type) => TYPE_CATALOG[type].group === groupId).map(
                  (type) =>
                    html`<option value="${type}" ${flag('selected', row.type === type)}>
                      ${typeName(chrome, type)}
                    </option>`,
                )}
              </optgroup>`,
          )}
        </select>
      </div>
    </div>
    <label for="${id('help')}">${t('builder.help', 'Help for the client (optional)')}</label>
    <textarea id="${id('help')}" name="${n('help')}" rows="2">${row.help}</textarea>
    <label class="inline"
      ><input type="checkbox" name="${n('required')}" ${flag('checked', row.required)} />
      ${t('builder.required', 'Required')}</label
    >
    <div class="constraints">${constraintGroups(chrome, naming, row, options.roundTrip)}</div>
    <details class="advanced">
      <summary>${t('builder.advanced', 'Advanced')}</summary>
      <div class="grid">
        <div>
          <label for="${id('key')}">${t('builder.key', 'Name in results and the API')}</label>
          <input
            type="text"
            id="${id('key')}"
            name="${n('key')}"
            value="${row.key}"
            pattern="[a-z][a-z0-9_]*"
            maxlength="64"
            aria-describedby="${id('key')}-hint"
            ${flag('readonly', options.keyFixed === true)}
          />
          <small class="muted" id="${id('key')}-hint"
            >${
              options.keyFixed
                ? t('builder.key_fixed', 'Fixed once the intake exists.')
                : t('builder.key_hint', 'Made from the label when left empty (lower case, digits and _).')
            }</small
          >
        </div>
        <div>
          <label for="${id('example')}">${t('builder.example', 'Example answer')}</label>
          <input
            type="text"
            id="${id('example')}"
            name="${n('example')}"
            value="${row.example}"
            maxlength="200"
          />
        </div>
        ${
          options.keyFixed
            ? null
            : html`<div>
                <label for="${id('assignee')}">${t('builder.assignee', 'Answered by')}</label>
                <select id="${id('assignee')}" name="${n('assignee')}">
                  <option value="client" ${flag('selected', row.assignee !== 'owner')}>
                    ${t('builder.assignee_client', 'the client')}
                  </option>
                  <option value="owner" ${flag('selected', row.assignee === 'owner')}>
                    ${t('builder.assignee_owner', 'us (a decision in the dashboard)')}
                  </option>
                </select>
              </div>`
        }
      </div>
    </details>
    ${options.actions ?? null}
  </fieldset>`;
}

/** The palette of kinds to add: submit buttons (round trip without script) or script-only buttons. */
export function typePalette(chrome: Chrome, roundTrip: RoundTrip): Html {
  const { t } = chrome;
  return html`<div class="type-palette" data-type-palette ${flag('hidden', !roundTrip)}>
    <h3>${t('builder.add_item', 'Add an item')}</h3>
    <ul>
      ${GROUPS.flatMap(([groupId]) => ITEM_TYPES.filter((type) => TYPE_CATALOG[type].group === groupId)).map(
        (type) =>
          html`<li>
            <button
              type="${roundTrip ? 'submit' : 'button'}"
              class="secondary"
              name="intent"
              value="add:${type}"
              formnovalidate
              ${attr('formaction', roundTrip ? `${roundTrip}#added` : null)}
              data-add-type="${type}"
            >
              ${typeIcon(type)} <span>${typeName(chrome, type)}</span>
            </button>
          </li>`,
      )}
    </ul>
  </div>`;
}

/** A card to copy for new items (script): its index is a placeholder the script replaces. */
export function cardTemplate(chrome: Chrome, roundTrip: RoundTrip): Html {
  const blank = emptyRow();
  return html`<template id="item-card-template">
    ${itemCard(chrome, { index: '__n__', idPrefix: '' }, blank, {
      roundTrip: false,
      actions: removeButton(chrome, '__n__', roundTrip),
    })}
  </template>`;
}

export function removeButton(chrome: Chrome, index: number | string, roundTrip: RoundTrip): Html {
  return html`<div class="actions">
    <button
      type="${roundTrip ? 'submit' : 'button'}"
      class="secondary"
      name="intent"
      value="remove:${index}"
      formnovalidate
      data-remove-item
      ${flag('hidden', !roundTrip)}
    >
      ${chrome.t('builder.remove_item', 'Remove this item')}
    </button>
  </div>`;
}

/**
 * The form's first submit button, out of sight: Enter in a field refreshes the cards instead of
 * pressing the first visible button (which may remove an item).
 */
export function refreshDefault(chrome: Chrome): Html {
  return html`<button
    type="submit"
    name="intent"
    value="refresh"
    formnovalidate
    class="default-action"
    tabindex="-1"
    aria-hidden="true"
  >
    ${chrome.t('builder.refresh', 'Update')}
  </button>`;
}
