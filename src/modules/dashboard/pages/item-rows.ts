import { html, type Html } from '../../portal/page/html.js';
import type { ItemFormRow } from '../item-form.js';
import type { Chrome } from '../layout.js';
import { cardTemplate, itemCard, removeButton, typePalette } from './builder-items.js';

/**
 * The item cards of a form that has no round trip of its own (the template form): the script adds
 * and removes cards; without it, the spare empty cards the page renders take new items.
 */
export function itemRows(chrome: Chrome, rows: ItemFormRow[]): Html {
  return html`<div
      id="item-rows"
      data-item-cards
      data-item-legend="${chrome.t('builder.item_n', 'Item {{n}}', { n: '{{n}}' })}"
    >
      ${rows.map((row, i) =>
        itemCard(chrome, { index: i, idPrefix: '' }, row, {
          roundTrip: false,
          actions: removeButton(chrome, i, false),
        }),
      )}
    </div>
    ${typePalette(chrome, false)} ${cardTemplate(chrome, false)}`;
}
