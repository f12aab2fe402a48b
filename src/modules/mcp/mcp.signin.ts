import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AGENT_SCOPES } from '../../domain/scopes.js';
import { API_KEY_PATTERN } from '../keys/keys.domain.js';
import {
  forgetCredential,
  keyHint,
  pollDeviceCode,
  readCredential,
  requestDeviceCode,
  storeCredential,
  type DeviceCode,
  type StoredCredential,
} from '../oauth/device.client.js';
import { DESTRUCTIVE, INTERNAL_WRITE } from './mcp.annotations.js';
import type { RestCaller, RestRequest, RestResponse } from './mcp.executor.js';
import type { LocalTool, LocalTools } from './mcp.server.js';

/*
 * Sign-in for the stdio server that never blocks: it starts at once with or without a key and lists
 * its tools. Without one, the `login` tool starts a device sign-in and returns the URL and code as
 * its result (the agent shows them to the user); the next call of any tool, or `login` again, picks the
 * key up once the user approved it. `logout` forgets the key. A malformed INTAKE_API_KEY is reported
 * by the first call, never a crash at start.
 */

const CLIENT_ID = 'intake-mcp';

type Source = 'environment' | 'stored' | 'login';

interface Signed {
  apiKey: string;
  source: Source;
}

export interface SignInOptions {
  baseUrl: string;
  /** INTAKE_API_KEY as given (it may be malformed: that is reported by the first call). */
  givenKey: string | undefined;
  /** Where `cli login` and this server keep keys, per service address. */
  credentialsFile: string;
  /** Where notes for a person go (stderr: stdout carries only the protocol). */
  note(line: string): void;
}

function text(message: string, structured?: Record<string, unknown>): CallToolResult {
  return {
    content: [
      { type: 'text', text: message },
      ...(structured ? [{ type: 'text' as const, text: JSON.stringify(structured) }] : []),
    ],
    ...(structured ? { structuredContent: structured } : {}),
  };
}

function refusal(error: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error, message }) }] };
}

export class StdioSignIn {
  private signed: Signed | undefined;
  private pending: DeviceCode | undefined;
  private lastPollMs = 0;
  /** Why INTAKE_API_KEY or the stored key cannot be used, told by the first call. */
  private problem: string | undefined;

  constructor(private readonly options: SignInOptions) {
    const given = options.givenKey;
    if (given !== undefined && given !== '') {
      if (API_KEY_PATTERN.test(given)) this.signed = { apiKey: given, source: 'environment' };
      else {
        this.problem =
          'INTAKE_API_KEY is not an API key (expected svc_live_… or svc_test_… with 43 more characters): fix it in the MCP server configuration, or call login to sign in by device code instead.';
      }
      return;
    }
    try {
      const stored = readCredential(options.credentialsFile, options.baseUrl);
      if (stored) this.signed = { apiKey: stored.api_key, source: 'stored' };
    } catch (error) {
      this.problem = error instanceof Error ? error.message : String(error);
    }
  }

  /** The tools' REST requests, with whatever key is current at the time of each call. */
  caller(send: (apiKey: string, request: RestRequest) => Promise<RestResponse>): RestCaller {
    const current = () => this.signed;
    return {
      get livemode() {
        return current()?.apiKey.startsWith('svc_live_') ?? false;
      },
      send(request) {
        const signed = current();
        if (!signed) return Promise.reject(new Error('not signed in'));
        return send(signed.apiKey, request);
      },
    };
  }

  /** Ends a pending device sign-in when the user has approved it; polls at most once per interval. */
  private async pickUp(): Promise<'issued' | 'waiting' | 'expired'> {
    const pending = this.pending;
    if (!pending) return 'expired';
    if (Date.now() >= pending.expiresAtMs) {
      this.pending = undefined;
      return 'expired';
    }
    if (Date.now() - this.lastPollMs < pending.intervalSeconds * 1000) return 'waiting';
    this.lastPollMs = Date.now();
    const poll = await pollDeviceCode({
      baseUrl: this.options.baseUrl,
      clientId: CLIENT_ID,
      deviceCode: pending.deviceCode,
    });
    if (poll.kind === 'pending') return 'waiting';
    if (poll.kind === 'slow_down') {
      pending.intervalSeconds += 5;
      return 'waiting';
    }
    this.pending = undefined;
    if (poll.kind === 'expired') return 'expired';
    this.adopt(poll.credential);
    return 'issued';
  }

  private adopt(credential: StoredCredential): void {
    this.signed = { apiKey: credential.api_key, source: 'login' };
    this.problem = undefined;
    try {
      storeCredential(this.options.credentialsFile, this.options.baseUrl, credential);
      this.options.note(`Signed in; key stored in ${this.options.credentialsFile}.`);
    } catch (error) {
      // The key still works for this session; only keeping it failed.
      this.options.note(`Signed in, but the key could not be stored: ${String(error)}`);
    }
  }

  private waitingResult(pending: DeviceCode, lead: string): CallToolResult {
    const seconds = Math.max(0, Math.round((pending.expiresAtMs - Date.now()) / 1000));
    return text(
      `${lead} Ask the user to open ${pending.verificationUriComplete} (signed in to the dashboard), check that it shows the code ${pending.userCode}, choose the access and approve. Then call login again, or any tool: the key is picked up. The code expires in ${Math.ceil(seconds / 60)} minutes.`,
      {
        status: 'pending',
        verification_uri: pending.verificationUri,
        verification_uri_complete: pending.verificationUriComplete,
        user_code: pending.userCode,
        expires_in: seconds,
      },
    );
  }

  private signedInResult(lead: string): CallToolResult {
    const signed = this.signed;
    if (!signed) return refusal('unauthorized', 'Not signed in.');
    const mode = signed.apiKey.startsWith('svc_live_') ? 'live' : 'test';
    return text(
      `${lead} The tools act with ${keyHint(signed.apiKey)} (${mode} data${mode === 'test' ? ': nothing reaches a real client' : ''}).`,
      { status: 'signed_in', mode, key_prefix: keyHint(signed.apiKey), source: signed.source },
    );
  }

  async login(): Promise<CallToolResult> {
    if (this.signed) {
      return this.signedInResult(
        'Already signed in; call logout first to sign in with another account or access.',
      );
    }
    try {
      if (this.pending) {
        const outcome = await this.pickUp();
        if (outcome === 'issued') return this.signedInResult('Signed in.');
        if (outcome === 'waiting' && this.pending) return this.waitingResult(this.pending, 'Still waiting.');
      }
      this.pending = await requestDeviceCode({
        baseUrl: this.options.baseUrl,
        clientId: CLIENT_ID,
        scopes: [...AGENT_SCOPES],
      });
      // The first poll may come at once (the service counts the interval from the previous poll).
      this.lastPollMs = 0;
      this.options.note(
        `To sign in, open ${this.pending.verificationUriComplete} and check the code ${this.pending.userCode}.`,
      );
      return this.waitingResult(this.pending, 'Sign-in started.');
    } catch (error) {
      this.pending = undefined;
      return refusal('unauthorized', error instanceof Error ? error.message : String(error));
    }
  }

  logout(): CallToolResult {
    const signed = this.signed;
    this.signed = undefined;
    this.pending = undefined;
    let forgotten = false;
    try {
      forgotten = forgetCredential(this.options.credentialsFile, this.options.baseUrl);
    } catch (error) {
      return refusal('internal_error', error instanceof Error ? error.message : String(error));
    }
    const fromEnvironment = signed?.source === 'environment';
    return text(
      `${signed ? `Signed out: ${keyHint(signed.apiKey)} is no longer used by this server` : 'Not signed in'}${
        forgotten ? ', and the stored key was removed' : ''
      }.${fromEnvironment ? ' INTAKE_API_KEY is set in the configuration: it is used again when the server restarts.' : ''} The key itself stays valid until revoked in the dashboard (API keys). Call login to sign in again.`,
      { status: 'signed_out', stored_key_removed: forgotten },
    );
  }

  /** Before a REST tool: the key, or a tool error saying how to get one. */
  async beforeRestCall(): Promise<CallToolResult | undefined> {
    if (this.signed) return undefined;
    if (this.pending) {
      try {
        if ((await this.pickUp()) === 'issued') return undefined;
      } catch (error) {
        return refusal('unauthorized', error instanceof Error ? error.message : String(error));
      }
      if (this.pending) {
        return refusal(
          'unauthorized',
          `Waiting for the user to approve the sign-in: open ${this.pending.verificationUriComplete} and check the code ${this.pending.userCode}; then retry.`,
        );
      }
    }
    return refusal(
      'unauthorized',
      this.problem ??
        'Not signed in: call the login tool, show the user the URL and code it returns, and retry once they approved it (or set INTAKE_API_KEY in the MCP server configuration).',
    );
  }

  tools(): LocalTools {
    const login: LocalTool = {
      name: 'login',
      title: 'Sign in',
      description:
        'Sign this server in to the intake service when no API key is configured (any other tool answers unauthorized until then). Returns at once with a URL and a code: show both to the user, who opens the URL signed in to the dashboard, checks the code, chooses the access (least privilege is ticked, test data first) and approves. Then call login again or just retry the tool: the key is picked up and stored for next time. When already signed in it says with which key.',
      input: z.strictObject({}),
      annotations: { ...INTERNAL_WRITE, openWorldHint: true },
      run: () => this.login(),
    };
    const logout: LocalTool = {
      name: 'logout',
      title: 'Sign out',
      description:
        "Forget the key this server acts with and remove it from the credentials file, e.g. to sign in with another account or with live instead of test data (then call login). The key stays valid until revoked in the dashboard's API keys.",
      input: z.strictObject({}),
      annotations: { ...DESTRUCTIVE, idempotentHint: true },
      run: () => Promise.resolve(this.logout()),
    };
    return { tools: [login, logout], beforeRestCall: () => this.beforeRestCall() };
  }
}
