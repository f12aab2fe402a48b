import { allRowsOf, emptyField, emptyRow, type ItemFormRow } from '../item-form.js';
import type { BuilderValues } from '../pages/builder.js';
import type { Form } from '../routing.js';

/** The builder's state: fresh, or from a form post (the new-intake page and the edit page's add form). */

/** A new builder, its cards started from a template or empty. */
export function blankValues(rows: ItemFormRow[], startedFrom: string | null): BuilderValues {
  return {
    source: 'scratch',
    template_id: '',
    project_name: '',
    client_email: '',
    client_name: '',
    client_language: '',
    client_phone: '',
    due_date: '',
    chase_schedule: 'default',
    client_brief: '',
    send: false,
    rows,
    added: null,
    startedFrom,
  };
}

/** The builder's state as posted, with the change a no-script button asked for applied. */
export function valuesOf(form: Form): BuilderValues {
  const all = allRowsOf(form);
  const intent = form.get('intent') ?? '';
  let rows = all;
  let added: number | null = null;
  const [verb, arg] = intent.split(':');
  if (verb === 'add') {
    const kept = all.filter((r) => r.label.trim() !== '' || r.key.trim() !== '');
    rows = [...kept, emptyRow(arg ?? 'text')];
    added = rows.length - 1;
  } else if (verb === 'remove') {
    const index = Number(arg);
    rows = all.filter((_, i) => i !== index);
  } else if (verb === 'field') {
    const index = Number(arg);
    rows = all.map((row, i) => (i === index ? { ...row, fields: [...row.fields, emptyField()] } : row));
  }
  return {
    source: form.get('source') === 'template' ? 'template' : 'scratch',
    template_id: form.get('template_id') ?? '',
    project_name: form.get('project_name') ?? '',
    client_email: form.get('client_email') ?? '',
    client_name: form.get('client_name') ?? '',
    client_language: form.get('client_language') ?? '',
    client_phone: form.get('client_phone') ?? '',
    due_date: form.get('due_date') ?? '',
    chase_schedule: form.get('chase_schedule') ?? 'default',
    client_brief: form.get('client_brief') ?? '',
    send: intent === 'send' || (intent === '' && form.get('send') === 'on'),
    rows: rows.length > 0 ? rows : [emptyRow()],
    added,
    startedFrom: null,
  };
}
