import { setUpBuilder } from './builder.js';

/**
 * The dashboard's only script, and every page works without it: copy buttons (secrets shown once,
 * portal links), confirmation before destructive forms, and the intake builder's cards.
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

setUpCopyButtons();
setUpConfirmations();
setUpBuilder();
