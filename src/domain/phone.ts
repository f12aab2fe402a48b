import {
  getExampleNumber,
  isSupportedCountry,
  parsePhoneNumberFromString,
  type CountryCode,
} from 'libphonenumber-js';
import examples from 'libphonenumber-js/mobile/examples';

/**
 * Phone numbers as people type them: "030 1234567" from a client in Germany is +49301234567. The
 * country that a number without "+" belongs to is the client's: `client.country`, else the country of
 * their time zone, else the region of their language tag.
 */

/** Time zones whose country is clear, for the clients who did not name one (the common ones). */
const ZONE_COUNTRY: Record<string, CountryCode> = {
  'Europe/Amsterdam': 'NL',
  'Europe/Athens': 'GR',
  'Europe/Berlin': 'DE',
  'Europe/Brussels': 'BE',
  'Europe/Bucharest': 'RO',
  'Europe/Budapest': 'HU',
  'Europe/Copenhagen': 'DK',
  'Europe/Dublin': 'IE',
  'Europe/Helsinki': 'FI',
  'Europe/Istanbul': 'TR',
  'Europe/Kyiv': 'UA',
  'Europe/Kiev': 'UA',
  'Europe/Lisbon': 'PT',
  'Europe/Ljubljana': 'SI',
  'Europe/London': 'GB',
  'Europe/Luxembourg': 'LU',
  'Europe/Madrid': 'ES',
  'Europe/Oslo': 'NO',
  'Europe/Paris': 'FR',
  'Europe/Prague': 'CZ',
  'Europe/Riga': 'LV',
  'Europe/Rome': 'IT',
  'Europe/Sofia': 'BG',
  'Europe/Stockholm': 'SE',
  'Europe/Tallinn': 'EE',
  'Europe/Vienna': 'AT',
  'Europe/Vilnius': 'LT',
  'Europe/Warsaw': 'PL',
  'Europe/Zagreb': 'HR',
  'Europe/Zurich': 'CH',
  'America/Chicago': 'US',
  'America/Denver': 'US',
  'America/Los_Angeles': 'US',
  'America/New_York': 'US',
  'America/Phoenix': 'US',
  'America/Anchorage': 'US',
  'Pacific/Honolulu': 'US',
  'America/Toronto': 'CA',
  'America/Vancouver': 'CA',
  'America/Mexico_City': 'MX',
  'America/Sao_Paulo': 'BR',
  'America/Argentina/Buenos_Aires': 'AR',
  'America/Bogota': 'CO',
  'America/Santiago': 'CL',
  'America/Lima': 'PE',
  'Asia/Tokyo': 'JP',
  'Asia/Seoul': 'KR',
  'Asia/Shanghai': 'CN',
  'Asia/Hong_Kong': 'HK',
  'Asia/Singapore': 'SG',
  'Asia/Kolkata': 'IN',
  'Asia/Calcutta': 'IN',
  'Asia/Dubai': 'AE',
  'Asia/Jerusalem': 'IL',
  'Asia/Bangkok': 'TH',
  'Asia/Jakarta': 'ID',
  'Asia/Manila': 'PH',
  'Australia/Sydney': 'AU',
  'Australia/Melbourne': 'AU',
  'Australia/Brisbane': 'AU',
  'Australia/Perth': 'AU',
  'Pacific/Auckland': 'NZ',
  'Africa/Johannesburg': 'ZA',
  'Africa/Lagos': 'NG',
  'Africa/Cairo': 'EG',
  'Africa/Nairobi': 'KE',
};

function supported(code: string | null | undefined): CountryCode | undefined {
  const upper = code?.toUpperCase();
  return upper && isSupportedCountry(upper) ? upper : undefined;
}

/** The country a client's phone numbers belong to when typed without "+" (undefined: unknown). */
export function clientCountry(client: {
  country: string | null;
  timezone: string | null;
  language: string | null;
}): CountryCode | undefined {
  const region = client.language ? /^[a-z]{2,3}[-_]([a-z]{2})\b/i.exec(client.language)?.[1] : undefined;
  return (
    supported(client.country) ??
    (client.timezone ? ZONE_COUNTRY[client.timezone] : undefined) ??
    supported(region)
  );
}

/** A typed phone number in E.164, or undefined when it is no possible number (for that country). */
export function phoneInE164(typed: string, country: string | undefined): string | undefined {
  const parsed = parsePhoneNumberFromString(typed, supported(country));
  return parsed?.isValid() ? parsed.number : undefined;
}

/** A number as a client of that country would write it (the portal field's placeholder). */
export function examplePhone(country: string | undefined): string | undefined {
  const code = supported(country);
  return code ? getExampleNumber(code, examples)?.formatNational() : undefined;
}
