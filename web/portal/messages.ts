import { formatBytes as formatBytesIn } from '../../src/modules/portal/page/bytes.js';

/** The page's data block: the intake id and the messages the script shows, in the page's language. */
interface PortalData {
  intake_id: string;
  language: string;
  messages: Record<string, string>;
}

function readData(): PortalData {
  const text = document.getElementById('portal-data')?.textContent ?? '{}';
  const parsed = JSON.parse(text) as Partial<PortalData>;
  return {
    intake_id: parsed.intake_id ?? '',
    language: parsed.language ?? 'en',
    messages: parsed.messages ?? {},
  };
}

export const data = readData();

/** A message with {{name}} placeholders filled in. */
export function t(key: string, params: Record<string, string | number> = {}): string {
  const template = data.messages[key] ?? key;
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => String(params[name] ?? ''));
}

export function formatNumber(value: number): string {
  return new Intl.NumberFormat(data.language).format(value);
}

export function formatBytes(bytes: number): string {
  return formatBytesIn(data.language, bytes);
}

export function formatTime(date: Date): string {
  return new Intl.DateTimeFormat(data.language, { timeStyle: 'short' }).format(date);
}

export function apiPath(...parts: string[]): string {
  return ['/portal/api', data.intake_id, ...parts]
    .map((p, i) => (i === 0 ? p : encodeURIComponent(p)))
    .join('/');
}

export function portalPath(...parts: string[]): string {
  return ['/portal', data.intake_id, ...parts].map((p, i) => (i === 0 ? p : encodeURIComponent(p))).join('/');
}

/** The error text of a portal answer: the server's own words in the page's language when it has them. */
export async function errorText(response: Response): Promise<string> {
  if (response.status === 429) return t('js.rate_limited');
  try {
    const body = (await response.json()) as { client_message?: string; message?: string };
    return body.client_message ?? body.message ?? t('js.invalid');
  } catch {
    return t('js.invalid');
  }
}
