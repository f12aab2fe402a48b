import { describe, expect, it } from 'vitest';
import { RecordingSms, TwilioSms, smsProviderFromUrl } from './sms.js';

describe('SMS_URL', () => {
  it('records SMS when unset', () => {
    expect(smsProviderFromUrl(undefined)).toBeInstanceOf(RecordingSms);
  });

  it('reads the twilio:// shorthand and the full Messages API address', () => {
    expect(smsProviderFromUrl('twilio://AC1:tok@+14155550100')).toBeInstanceOf(TwilioSms);
    expect(smsProviderFromUrl('twilio://AC1:tok@MG123')).toBeInstanceOf(TwilioSms);
    expect(
      smsProviderFromUrl(
        'https://AC1:tok@api.twilio.com/2010-04-01/Accounts/AC1/Messages.json?From=%2B14155550100',
      ),
    ).toBeInstanceOf(TwilioSms);
  });

  it('refuses addresses it cannot use, naming the problem', () => {
    expect(() => smsProviderFromUrl('twilio://+14155550100')).toThrow(/SID and auth token/);
    expect(() => smsProviderFromUrl('https://AC1:tok@api.twilio.com/x')).toThrow(
      /From or MessagingServiceSid/,
    );
    expect(() => smsProviderFromUrl('ftp://AC1:tok@host')).toThrow(/twilio:\/\/ or https:\/\//);
  });
});
