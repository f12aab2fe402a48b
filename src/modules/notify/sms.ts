/**
 * SMS behind a small provider interface, chosen by SMS_URL:
 *
 * - unset: SMS are recorded in the outbox table, not sent.
 * - `twilio://ACCOUNT_SID:AUTH_TOKEN@+14155550100` (or `@MGxxxxxxxx`, a messaging service): Twilio's
 *   Messages API at api.twilio.com.
 * - `https://ACCOUNT_SID:AUTH_TOKEN@api.twilio.com/2010-04-01/Accounts/ACCOUNT_SID/Messages.json?From=%2B14155550100`:
 *   the same API at an explicit address (any endpoint that speaks it: a regional edge, a gateway, a stub).
 *   `MessagingServiceSid=MG…` may stand in for From.
 */

export interface OutgoingSms {
  /** Ours (msg_…). */
  messageId: string;
  to: string;
  body: string;
}

export interface SentSms {
  providerMessageId: string | null;
}

/** `permanent`: the provider refused this message for good (invalid number, opted out…): do not retry. */
export class SmsError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'SmsError';
  }
}

export interface SmsProvider {
  readonly kind: 'none' | 'twilio';
  /** `signal` (the job's) ends the request: the provider may then have taken the message or not. */
  send(sms: OutgoingSms, signal?: AbortSignal): Promise<SentSms>;
}

/** No SMS_URL: nothing leaves the process; the caller records the message. */
export class RecordingSms implements SmsProvider {
  readonly kind = 'none';
  send(): Promise<SentSms> {
    return Promise.resolve({ providerMessageId: null });
  }
}

const TWILIO_API = 'https://api.twilio.com/2010-04-01';
const SEND_TIMEOUT_MS = 15_000;

interface TwilioOptions {
  endpoint: string;
  accountSid: string;
  authToken: string;
  sender: { From: string } | { MessagingServiceSid: string };
}

/** Twilio's Messages API: a form-encoded POST with basic auth; the answer's `sid` is the provider id. */
export class TwilioSms implements SmsProvider {
  readonly kind = 'twilio';
  constructor(private readonly options: TwilioOptions) {}

  async send(sms: OutgoingSms, signal?: AbortSignal): Promise<SentSms> {
    const { endpoint, accountSid, authToken, sender } = this.options;
    const form = new URLSearchParams({ To: sms.to, Body: sms.body, ...sender });
    let response: Response;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
        signal: signal
          ? AbortSignal.any([signal, AbortSignal.timeout(SEND_TIMEOUT_MS)])
          : AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
    } catch (error) {
      throw new SmsError(`SMS provider unreachable: ${(error as Error).message}`, false);
    }
    const text = await response.text();
    let body: { sid?: unknown; code?: unknown; message?: unknown } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      body = {};
    }
    if (response.ok) {
      return { providerMessageId: typeof body.sid === 'string' ? body.sid : null };
    }
    const reason = `SMS provider answered ${response.status}${typeof body.code === 'number' || typeof body.code === 'string' ? ` (code ${body.code})` : ''}: ${typeof body.message === 'string' ? body.message : text.slice(0, 200)}`;
    // 400/404/422: this message can never go through (bad number, unsubscribed…). 401/403, 429, 5xx: try again later.
    throw new SmsError(reason, [400, 404, 422].includes(response.status));
  }
}

/** The provider named by SMS_URL (see the file comment); throws on a URL it cannot use. */
export function smsProviderFromUrl(url: string | undefined): SmsProvider {
  if (!url) return new RecordingSms();
  const parsed = new URL(url);
  const accountSid = decodeURIComponent(parsed.username);
  const authToken = decodeURIComponent(parsed.password);
  if (!accountSid || !authToken) {
    throw new Error('SMS_URL must carry the account SID and auth token as user:password.');
  }
  if (parsed.protocol === 'twilio:') {
    const from = decodeURIComponent(parsed.hostname || parsed.pathname.replace(/^\/+/, ''));
    if (!from) throw new Error('SMS_URL twilio://SID:TOKEN@FROM needs the sender number or MG… service id.');
    return new TwilioSms({
      endpoint: `${TWILIO_API}/Accounts/${encodeURIComponent(accountSid)}/Messages.json`,
      accountSid,
      authToken,
      sender: from.startsWith('MG') ? { MessagingServiceSid: from } : { From: from },
    });
  }
  if (parsed.protocol === 'https:' || parsed.protocol === 'http:') {
    const from = parsed.searchParams.get('From');
    const service = parsed.searchParams.get('MessagingServiceSid');
    if (!from && !service) throw new Error('SMS_URL needs a From or MessagingServiceSid query parameter.');
    const endpoint = new URL(parsed.toString());
    endpoint.username = '';
    endpoint.password = '';
    endpoint.search = '';
    return new TwilioSms({
      endpoint: endpoint.toString(),
      accountSid,
      authToken,
      sender: service ? { MessagingServiceSid: service } : { From: from ?? '' },
    });
  }
  throw new Error(`SMS_URL must start with twilio:// or https://, not ${parsed.protocol}//`);
}
