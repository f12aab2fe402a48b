/**
 * The dashboard's only script, and every page works without it: copy buttons for secrets shown once,
 * confirmation before destructive forms, and "add another item" on the intake and template forms.
 */

function setUpCopyButtons(): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', () => {
      const target = document.getElementById(button.dataset.copy ?? '');
      const text = target?.textContent?.trim() ?? '';
      void navigator.clipboard.writeText(text).then(() => {
        button.textContent = button.dataset.copied ?? 'Copied';
      });
    });
  }
}

function setUpConfirmations(): void {
  for (const form of document.querySelectorAll<HTMLFormElement>('form[data-confirm]')) {
    form.addEventListener('submit', (event) => {
      if (!window.confirm(form.dataset.confirm ?? 'Are you sure?')) event.preventDefault();
    });
  }
}

/** Clones the last item fieldset with its inputs emptied and renumbered (items[3][label] → items[4][label]). */
function setUpItemRows(): void {
  const button = document.querySelector<HTMLButtonElement>('button[data-add-item]');
  const list = document.getElementById('item-rows');
  if (!button || !list) return;
  button.hidden = false;
  button.addEventListener('click', () => {
    const rows = list.querySelectorAll<HTMLFieldSetElement>('fieldset.item-row');
    const last = rows[rows.length - 1];
    if (!last) return;
    const index = rows.length;
    const copy = last.cloneNode(true) as HTMLFieldSetElement;
    for (const element of copy.querySelectorAll<HTMLElement>('[name], [id], [for]')) {
      for (const attribute of ['name', 'id', 'for']) {
        const value = element.getAttribute(attribute);
        if (value) element.setAttribute(attribute, value.replace(/\d+/, String(index)));
      }
      if (element instanceof HTMLInputElement) {
        if (element.type === 'checkbox') element.checked = element.defaultChecked;
        else element.value = '';
      } else if (element instanceof HTMLTextAreaElement) element.value = '';
    }
    const legend = copy.querySelector('legend');
    if (legend) legend.textContent = legend.textContent?.replace(/\d+/, String(index + 1)) ?? '';
    list.appendChild(copy);
    copy.querySelector<HTMLInputElement>('input')?.focus();
  });
}

setUpCopyButtons();
setUpConfirmations();
setUpItemRows();
