import { ITEM_TYPES } from '../../../domain/items.js';
import { attr, flag, html, type Html } from '../../portal/page/html.js';
import type { ItemFormRow } from '../item-form.js';
import type { Chrome } from '../layout.js';

function field(name: string, id: string, label: string, value: string, type = 'text', hint?: string): Html {
  return html`<div>
    <label for="${id}">${label}</label>
    <input
      type="${type}"
      id="${id}"
      name="${name}"
      value="${value}"
      ${attr('aria-describedby', hint ? `${id}-hint` : null)}${type === 'number' ? html` step="any"` : null}
    />
    ${hint ? html`<small class="muted" id="${id}-hint">${hint}</small>` : null}
  </div>`;
}

/**
 * One fieldset per item, offering every item type and constraint (each constraint applies to the
 * types its hint names; the service rejects one that does not fit the type, naming it).
 */
export function itemRow(chrome: Chrome, index: number, row: ItemFormRow): Html {
  const { t } = chrome;
  const n = (f: string) => `items[${index}][${f}]`;
  const id = (f: string) => `item-${index}-${f}`;
  return html`<fieldset class="item-row">
    <legend>${t('items.legend', 'Item {{n}}', { n: index + 1 })}</legend>
    <div class="grid">
      ${field(n('label'), id('label'), t('items.label', 'Label'), row.label)}
      ${field(n('key'), id('key'), t('items.key', 'Key'), row.key, 'text', t('items.key_hint', 'snake_case; made from the label when empty'))}
      <div>
        <label for="${id('type')}">${t('items.type', 'Type')}</label>
        <select id="${id('type')}" name="${n('type')}">
          ${ITEM_TYPES.map((type) => html`<option value="${type}" ${flag('selected', row.type === type)}>${type}</option>`)}
        </select>
      </div>
      <div>
        <label for="${id('assignee')}">${t('items.assignee', 'Answered by')}</label>
        <select id="${id('assignee')}" name="${n('assignee')}">
          <option value="client" ${flag('selected', row.assignee !== 'owner')}>
            ${t('items.client', 'the client')}
          </option>
          <option value="owner" ${flag('selected', row.assignee === 'owner')}>
            ${t('items.owner', 'us (a decision in the dashboard)')}
          </option>
        </select>
      </div>
    </div>
    <label for="${id('help')}">${t('items.help', 'Help text')}</label>
    <textarea id="${id('help')}" name="${n('help')}" rows="2">${row.help}</textarea>
    ${field(n('example'), id('example'), t('items.example', 'Example answer'), row.example, 'text', t('items.example_hint', 'Shown to the client as a placeholder and when an answer does not fit.'))}
    <label class="inline"
      ><input type="checkbox" name="${n('required')}" ${flag('checked', row.required)} />
      ${t('items.required', 'Required')}</label
    >
    <details>
      <summary>${t('items.constraints', 'Constraints')}</summary>
      <div class="grid">
        ${field(n('formats'), id('formats'), t('items.formats', 'Formats'), row.formats, 'text', 'image, file, file_list: png, jpg, svg, pdf…')}
        ${field(n('min_width'), id('min_width'), t('items.min_width', 'Minimum width (px)'), row.min_width, 'number', 'image')}
        ${field(n('min_height'), id('min_height'), t('items.min_height', 'Minimum height (px)'), row.min_height, 'number', 'image')}
        ${field(n('max_mb'), id('max_mb'), t('items.max_mb', 'Largest file (MB)'), row.max_mb, 'number', 'image, file, file_list')}
        ${field(n('min_count'), id('min_count'), t('items.min_count', 'At least (count)'), row.min_count, 'number', 'file_list, multiselect, color_list')}
        ${field(n('max_count'), id('max_count'), t('items.max_count', 'At most (count)'), row.max_count, 'number', 'file_list, multiselect, color_list')}
        ${field(n('min_chars'), id('min_chars'), t('items.min_chars', 'Minimum characters'), row.min_chars, 'number', 'text kinds')}
        ${field(n('max_chars'), id('max_chars'), t('items.max_chars', 'Maximum characters'), row.max_chars, 'number', 'text kinds')}
        ${field(n('pattern'), id('pattern'), t('items.pattern', 'Pattern (regular expression)'), row.pattern, 'text', 'text')}
        ${field(n('min'), id('min'), t('items.min', 'Smallest number'), row.min, 'number', 'number')}
        ${field(n('max'), id('max'), t('items.max', 'Largest number'), row.max, 'number', 'number')}
        ${field(n('min_date'), id('min_date'), t('items.min_date', 'Earliest date'), row.min_date, 'date', 'date')}
        ${field(n('max_date'), id('max_date'), t('items.max_date', 'Latest date'), row.max_date, 'date', 'date')}
      </div>
      <label class="inline"
        ><input
          type="checkbox"
          name="${n('transparent_background')}"
          ${flag('checked', row.transparent_background)}
        />
        ${t('items.transparent', 'Transparent background (image)')}</label
      >
      <label class="inline"
        ><input type="checkbox" name="${n('integer')}" ${flag('checked', row.integer)} />
        ${t('items.integer', 'Whole numbers only (number)')}</label
      >
      <label for="${id('options')}"
        >${t('items.options', 'Choices (select, multiselect): one per line, "value: Label"')}</label
      >
      <textarea id="${id('options')}" name="${n('options')}" rows="3">${row.options}</textarea>
      <label for="${id('schema')}">${t('items.schema', 'JSON Schema (structured)')}</label>
      <textarea id="${id('schema')}" name="${n('schema')}" rows="4">${row.schema}</textarea>
    </details>
  </fieldset>`;
}

/** The rows plus "add another item" (script), and spare empty rows for use without script. */
export function itemRows(chrome: Chrome, rows: ItemFormRow[]): Html {
  return html`<div id="item-rows">${rows.map((row, i) => itemRow(chrome, i, row))}</div>
    <button type="button" class="secondary" data-add-item hidden>
      ${chrome.t('items.add', 'Add another item')}
    </button>`;
}
