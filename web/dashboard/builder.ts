/**
 * The intake builder's enhancements. Without them every group of constraints is on the page under
 * its heading, and the add / remove / add-a-field buttons post the form back to be re-rendered;
 * with them, each card shows only its kind's constraints, presets fill in the constraints, and
 * cards and fields are added and removed in place.
 */

function typesOf(element: HTMLElement): string[] {
  return (element.dataset.types ?? '').split(' ').filter(Boolean);
}

/** Shows what applies to the card's kind of answer and hides the rest (hidden inputs still post; the server ignores them). */
function applyType(card: HTMLElement): void {
  const select = card.querySelector<HTMLSelectElement>('select[data-type-select]');
  if (!select) return;
  const type = select.value;
  card.dataset.type = type;
  for (const element of card.querySelectorAll<HTMLElement>('[data-types]')) {
    const applies = typesOf(element).includes(type);
    element.hidden = !applies;
    if (element instanceof HTMLOptionElement) element.disabled = !applies;
  }
  for (const heading of card.querySelectorAll<HTMLElement>('.for-types')) heading.hidden = true;
  const preset = card.querySelector<HTMLSelectElement>('select[data-preset]');
  if (preset?.selectedOptions[0]?.disabled) preset.value = '';
  const icon = card.querySelector<HTMLElement>('[data-type-icon]');
  const source = document.querySelector(`[data-add-type="${CSS.escape(type)}"] svg`);
  if (icon && source) icon.replaceChildren(source.cloneNode(true));
}

/** A preset fills in the formats, the width and the transparency. */
function applyPreset(card: HTMLElement, select: HTMLSelectElement): void {
  const option = select.selectedOptions[0];
  if (!option || option.value === '') return;
  const formats = (option.dataset.formats ?? '').split(' ');
  for (const box of card.querySelectorAll<HTMLInputElement>('input[type="checkbox"][name$="[formats]"]')) {
    box.checked = formats.includes(box.value);
  }
  const width = card.querySelector<HTMLInputElement>('input[name$="[min_width]"]');
  if (width) width.value = option.dataset.minWidth ?? '';
  const transparent = card.querySelector<HTMLInputElement>('input[name$="[transparent_background]"]');
  if (transparent) transparent.checked = option.dataset.transparent === 'true';
}

/** The key the label gives, shown as the key field's placeholder (the server makes the same). */
function slug(label: string): string {
  const base = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/ß/g, 'ss')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60);
  if (base === '') return '';
  return /^[a-z]/.test(base) ? base : `item_${base}`;
}

/** A field's choices matter only for the choice kinds. */
function applyFieldKind(row: HTMLElement): void {
  const kind = row.querySelector<HTMLSelectElement>('select[name$="[kind]"]')?.value ?? '';
  const options = row.querySelector<HTMLElement>('[data-field-options]');
  if (options) options.hidden = kind !== 'choice' && kind !== 'choices';
}

function setUpFieldRow(row: HTMLElement): void {
  row.querySelector('select[name$="[kind]"]')?.addEventListener('change', () => applyFieldKind(row));
  applyFieldKind(row);
}

function setUpCard(card: HTMLElement): void {
  for (const row of card.querySelectorAll<HTMLElement>('[data-field-row]')) setUpFieldRow(row);
  const select = card.querySelector<HTMLSelectElement>('select[data-type-select]');
  select?.addEventListener('change', () => applyType(card));
  const preset = card.querySelector<HTMLSelectElement>('select[data-preset]');
  preset?.addEventListener('change', () => applyPreset(card, preset));
  // A constraint changed by hand is no longer the preset's (which would fill empty ones again on save).
  for (const input of card.querySelectorAll<HTMLInputElement>(
    'input[name$="[formats]"], input[name$="[min_width]"], input[name$="[transparent_background]"]',
  )) {
    input.addEventListener('change', () => {
      if (preset) preset.value = '';
    });
  }
  const label = card.querySelector<HTMLInputElement>('input[data-label]');
  const key = card.querySelector<HTMLInputElement>('input[name$="[key]"]');
  if (label && key && !key.readOnly) {
    const update = () => {
      key.placeholder = slug(label.value);
    };
    label.addEventListener('input', update);
    update();
  }
  for (const button of card.querySelectorAll<HTMLButtonElement>('button[data-remove-item]')) {
    button.hidden = false;
    button.addEventListener('click', (event) => {
      event.preventDefault();
      const list = card.parentElement;
      card.remove();
      list?.querySelector<HTMLInputElement>('input[data-label]')?.focus();
    });
  }
  for (const button of card.querySelectorAll<HTMLButtonElement>('button[data-add-field]')) {
    button.hidden = false;
    button.addEventListener('click', (event) => {
      event.preventDefault();
      addField(card);
    });
  }
  applyType(card);
}

/** Copies the last field row of a structured card, emptied and numbered one higher. */
function addField(card: HTMLElement): void {
  const rows = card.querySelectorAll<HTMLElement>('[data-field-row]');
  const last = rows[rows.length - 1];
  if (!last) return;
  const next = rows.length;
  const copy = last.cloneNode(true) as HTMLElement;
  for (const element of copy.querySelectorAll<HTMLElement>('[name], [id], [for]')) {
    for (const attribute of ['name', 'id', 'for']) {
      const value = element.getAttribute(attribute);
      if (!value) continue;
      element.setAttribute(
        attribute,
        value.replace(/\[fields\]\[\d+\]/, `[fields][${next}]`).replace(/-fields-\d+-/, `-fields-${next}-`),
      );
    }
    if (element instanceof HTMLInputElement) {
      if (element.type === 'checkbox') element.checked = false;
      else element.value = '';
    } else if (element instanceof HTMLTextAreaElement) element.value = '';
    else if (element instanceof HTMLSelectElement) element.selectedIndex = 0;
  }
  last.after(copy);
  setUpFieldRow(copy);
  copy.querySelector<HTMLInputElement>('input')?.focus();
}

/** The next free card number of a form (cards may have been removed: numbers need not be dense). */
function nextIndex(form: HTMLElement): number {
  let max = -1;
  for (const element of form.querySelectorAll<HTMLElement>('[name^="items["]')) {
    const n = Number(/^items\[(\d+)\]/.exec(element.getAttribute('name') ?? '')?.[1] ?? -1);
    if (n > max) max = n;
  }
  return max + 1;
}

function addCard(form: HTMLElement, type: string): void {
  const template = form.querySelector<HTMLTemplateElement>('#item-card-template');
  const list = form.querySelector<HTMLElement>('[data-item-cards]');
  if (!template || !list) return;
  const index = nextIndex(form);
  const holder = document.createElement('template');
  holder.innerHTML = template.innerHTML.replaceAll('__n__', String(index));
  const card = holder.content.querySelector<HTMLElement>('[data-item-card]');
  if (!card) return;
  const select = card.querySelector<HTMLSelectElement>('select[data-type-select]');
  if (select) select.value = type;
  const legend = card.querySelector<HTMLElement>('[data-item-legend]');
  if (legend)
    legend.textContent = (list.dataset.itemLegend ?? 'Item {{n}}').replace(
      '{{n}}',
      String(list.querySelectorAll('[data-item-card]').length + 1),
    );
  list.appendChild(card);
  setUpCard(card);
  card.querySelector<HTMLInputElement>('input[data-label]')?.focus();
}

export function setUpBuilder(): void {
  for (const card of document.querySelectorAll<HTMLElement>('[data-item-card]')) {
    if (card.closest('template')) continue;
    setUpCard(card);
  }
  for (const palette of document.querySelectorAll<HTMLElement>('[data-type-palette]')) {
    palette.hidden = false;
    const form = palette.closest('form');
    if (!form) continue;
    for (const button of palette.querySelectorAll<HTMLButtonElement>('button[data-add-type]')) {
      button.addEventListener('click', (event) => {
        event.preventDefault();
        addCard(form, button.dataset.addType ?? 'text');
      });
    }
  }
  // Enter in a field does not post the builder (it would only re-render it).
  for (const form of document.querySelectorAll<HTMLFormElement>('form[data-builder]')) {
    form.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && event.target instanceof HTMLInputElement) event.preventDefault();
    });
  }
}
