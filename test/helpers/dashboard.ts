import type { TestServer } from './server.js';

/** A browser-like client for the dashboard over plain HTTP: a cookie jar, no redirects followed. */
export function dashboardClient(baseUrl: string) {
  const jar = new Map<string, string>();

  function remember(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const index = pair?.indexOf('=') ?? -1;
      if (!pair || index < 0) continue;
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      if (value === '' || /max-age=0/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
  }

  function cookieHeader(): string {
    return [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  async function request(method: string, path: string, form?: Record<string, string | string[]>) {
    const headers: Record<string, string> = { cookie: cookieHeader() };
    let body: string | undefined;
    if (form) {
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(form)) {
        for (const one of Array.isArray(value) ? value : [value]) params.append(name, one);
      }
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(baseUrl + path, { method, headers, body, redirect: 'manual' });
    remember(response);
    const text = await response.text();
    return {
      status: response.status,
      location: response.headers.get('location'),
      headers: response.headers,
      text,
    };
  }

  return {
    jar,
    get: (path: string) => request('GET', path),
    post: (path: string, form: Record<string, string | string[]>) => request('POST', path, form),
  };
}

export type DashboardClient = ReturnType<typeof dashboardClient>;

/** The CSRF token of a rendered form. */
export function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match?.[1]) throw new Error('No CSRF field in the page');
  return match[1];
}

/** The sign-in link of an email's text. */
export function signInLinkOf(text: string): string {
  const match = /https?:\/\/\S+\/dashboard\/sign-in\/confirm\?token=[A-Za-z0-9_-]+/.exec(text);
  if (!match) throw new Error(`No sign-in link in: ${text}`);
  return match[0];
}

/** The account's own email (its first dashboard user). */
export async function ownerEmail(server: TestServer, accountId: string): Promise<string> {
  const row = await server.server.services.db.kysely
    .selectFrom('accounts')
    .select('email')
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  return row.email;
}
