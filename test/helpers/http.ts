export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
}

/** A small client for real HTTP calls against a test server. */
export function client(baseUrl: string, apiKey?: string) {
  async function call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (apiKey && !('authorization' in lowerKeys(headers))) headers.authorization = `Bearer ${apiKey}`;
    let body: string | Uint8Array | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }
  return {
    call,
    get: <T = Record<string, unknown>>(path: string, options?: RequestOptions) =>
      call<T>('GET', path, options),
    post: <T = Record<string, unknown>>(path: string, body?: unknown, options?: RequestOptions) =>
      call<T>('POST', path, { ...options, body }),
    patch: <T = Record<string, unknown>>(path: string, body?: unknown, options?: RequestOptions) =>
      call<T>('PATCH', path, { ...options, body }),
    delete: <T = Record<string, unknown>>(path: string, options?: RequestOptions) =>
      call<T>('DELETE', path, options),
  };
}

function lowerKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k.toLowerCase(), v]));
}

export type Client = ReturnType<typeof client>;
