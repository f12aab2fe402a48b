import type { EndpointRow } from '../../src/modules/webhooks/webhooks.repository.js';

/** An enabled endpoint's row as the repository stores it, with `overrides` on top. */
export function endpointRow(
  id: string,
  accountId: string,
  at: string,
  overrides: Partial<EndpointRow> = {},
): EndpointRow {
  return {
    id,
    account_id: accountId,
    livemode: 1,
    url: `https://example.com/${id}`,
    events: ['*'],
    format: 'raw',
    secret_ciphertext: `sealed-${id}`,
    previous_secret_ciphertext: null,
    previous_secret_expires_at: null,
    status: 'enabled',
    disabled_reason: null,
    disabled_at: null,
    created_at: at,
    updated_at: at,
    ...overrides,
  };
}
