/**
 * HTML built by tagged templates: every interpolated value is escaped unless it is already Html
 * (the result of another template), so untrusted text (labels, names, briefs) can never become markup.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);
}

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return (part as readonly Part[]).map(render).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] ?? '';
  parts.forEach((part, i) => {
    out += render(part) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** Markup from a trusted source (our own icons). */
export function raw(markup: string): Html {
  return new Html(markup);
}

/** An attribute that is present only when `on` (boolean attributes such as required, checked). */
export function flag(name: string, on: boolean | undefined): Html {
  return new Html(on ? ` ${name}` : '');
}

/** An attribute with a value, left out when the value is undefined or null. */
export function attr(name: string, value: string | number | null | undefined): Html {
  return value === undefined || value === null
    ? new Html('')
    : new Html(` ${name}="${escapeHtml(String(value))}"`);
}

/** JSON for a <script type="application/json"> block: `<` escaped so no text can close the element. */
export function jsonForScript(value: unknown): Html {
  return new Html(
    JSON.stringify(value)
      .replace(/</g, '\\u003c')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029'),
  );
}
