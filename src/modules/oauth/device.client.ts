import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../config.js';
import { API_KEY_PATTERN } from '../keys/keys.domain.js';

/**
 * The device authorization grant from the agent's side (`cli login`, and `cli mcp` without a key):
 * ask for a code, show it with the URL, poll until a signed-in user approves it in the dashboard,
 * and keep the API key in a credentials file readable by its owner only (mode 0600).
 */

export const StoredCredential = z.object({
  api_key: z.string().regex(API_KEY_PATTERN),
  key_id: z.string(),
  mode: z.enum(['live', 'test']),
  scopes: z.array(z.string()),
  created_at: z.string(),
});
export type StoredCredential = z.infer<typeof StoredCredential>;

/** Credentials per service address, so one machine can sign in to several services. */
const CredentialsFile = z.record(z.string(), StoredCredential);

/** INTAKE_CREDENTIALS_FILE, else $XDG_CONFIG_HOME/intake/credentials.json (~/.config by default). */
export function credentialsPath(env: NodeJS.ProcessEnv): string {
  if (env.INTAKE_CREDENTIALS_FILE) return env.INTAKE_CREDENTIALS_FILE;
  const configHome = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(configHome, 'intake', 'credentials.json');
}

function readAll(file: string): z.infer<typeof CredentialsFile> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return {};
  }
  const parsed = CredentialsFile.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new ConfigError(`${file} is not a credentials file of this tool: remove it and sign in again.`);
  return parsed.data;
}

export function readCredential(file: string, baseUrl: string): StoredCredential | undefined {
  return readAll(file)[baseUrl];
}

/** Writes through a temporary file created 0600 (never readable by others, even for a moment), then renames. */
export function storeCredential(file: string, baseUrl: string, credential: StoredCredential): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const all = { ...readAll(file), [baseUrl]: credential };
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(all, null, 2) + '\n', { mode: 0o600 });
  renameSync(temporary, file);
  chmodSync(file, 0o600);
}

const DeviceAuthorization = z.object({
  device_code: z.string(),
  user_code: z.string(),
  verification_uri: z.string(),
  verification_uri_complete: z.string().optional(),
  expires_in: z.number(),
  interval: z.number().default(5),
});

const TokenAnswer = z.object({
  access_token: z.string().regex(API_KEY_PATTERN),
  scope: z.string(),
  key_id: z.string(),
  mode: z.enum(['live', 'test']),
});

const OAuthErrorAnswer = z.object({ error: z.string(), error_description: z.string().optional() });

export interface DeviceLoginOptions {
  baseUrl: string;
  clientId: 'intake-cli' | 'intake-mcp';
  scopes: string[];
  /** Where the code and URL are shown: stdout for the CLI, stderr for the stdio MCP server. */
  say: (line: string) => void;
  sleep?: (ms: number) => Promise<void>;
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function post(url: string, form: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    throw new ConfigError(`${url} answered ${response.status} without JSON: is BASE_URL the intake service?`);
  }
}

/** A started device sign-in: what the person must open and check, and what the poller sends back. */
export interface DeviceCode {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string;
  expiresAtMs: number;
  intervalSeconds: number;
}

/** Asks the service for a device code (RFC 8628 §3.1). */
export async function requestDeviceCode(options: {
  baseUrl: string;
  clientId: DeviceLoginOptions['clientId'];
  scopes: string[];
}): Promise<DeviceCode> {
  const started = await post(`${options.baseUrl}/oauth/device_authorization`, {
    client_id: options.clientId,
    scope: options.scopes.join(' '),
  });
  const device = DeviceAuthorization.safeParse(started.body);
  if (started.status !== 200 || !device.success) {
    throw new ConfigError(`Could not start the sign-in (${started.status}): ${JSON.stringify(started.body)}`);
  }
  return {
    deviceCode: device.data.device_code,
    userCode: device.data.user_code,
    verificationUri: device.data.verification_uri,
    verificationUriComplete: device.data.verification_uri_complete ?? device.data.verification_uri,
    expiresAtMs: Date.now() + device.data.expires_in * 1000,
    intervalSeconds: device.data.interval,
  };
}

export type DevicePoll =
  | { kind: 'issued'; credential: StoredCredential }
  | { kind: 'pending' }
  | { kind: 'slow_down' }
  | { kind: 'expired' };

/** One poll of the token endpoint (RFC 8628 §3.4); a denial or another error throws, saying why. */
export async function pollDeviceCode(options: {
  baseUrl: string;
  clientId: DeviceLoginOptions['clientId'];
  deviceCode: string;
}): Promise<DevicePoll> {
  const answer = await post(`${options.baseUrl}/oauth/token`, {
    grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    device_code: options.deviceCode,
    client_id: options.clientId,
  });
  const token = TokenAnswer.safeParse(answer.body);
  if (answer.status === 200 && token.success) {
    return {
      kind: 'issued',
      credential: {
        api_key: token.data.access_token,
        key_id: token.data.key_id,
        mode: token.data.mode,
        scopes: token.data.scope.split(' ').filter(Boolean),
        created_at: new Date().toISOString(),
      },
    };
  }
  const error = OAuthErrorAnswer.safeParse(answer.body);
  const code = error.success ? error.data.error : `HTTP ${answer.status}`;
  if (code === 'authorization_pending') return { kind: 'pending' };
  if (code === 'slow_down') return { kind: 'slow_down' };
  if (code === 'expired_token') return { kind: 'expired' };
  if (code === 'access_denied') throw new ConfigError('The sign-in was denied in the dashboard.');
  throw new ConfigError(
    `Sign-in failed: ${code}${error.success && error.data.error_description ? ` (${error.data.error_description})` : ''}`,
  );
}

export async function deviceLogin(options: DeviceLoginOptions): Promise<StoredCredential> {
  const sleep = options.sleep ?? wait;
  const device = await requestDeviceCode(options);
  options.say(`To sign in, open ${device.verificationUriComplete}`);
  options.say(
    `and check that it shows the code ${device.userCode} (or enter it at ${device.verificationUri}).`,
  );
  options.say('Waiting for approval…');
  let interval = device.intervalSeconds;
  while (Date.now() < device.expiresAtMs) {
    await sleep(interval * 1000);
    const poll = await pollDeviceCode({ ...options, deviceCode: device.deviceCode });
    if (poll.kind === 'issued') return poll.credential;
    if (poll.kind === 'expired') break;
    if (poll.kind === 'slow_down') interval += 5;
  }
  throw new ConfigError('The code expired before it was approved: run the sign-in again.');
}

/** Removes the key stored for one service address (the others stay); true when there was one. */
export function forgetCredential(file: string, baseUrl: string): boolean {
  const all = readAll(file);
  if (!(baseUrl in all)) return false;
  const { [baseUrl]: _forgotten, ...rest } = all;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(rest, null, 2) + '\n', { mode: 0o600 });
  renameSync(temporary, file);
  return true;
}

/** The key's prefix, for messages: the secret itself is never printed. */
export function keyHint(apiKey: string): string {
  return `${apiKey.slice(0, apiKey.lastIndexOf('_') + 5)}…`;
}
