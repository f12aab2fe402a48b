import { html, type Html } from '../portal/page/html.js';
import { parseScopes } from '../../domain/oauth.js';
import { grantableScopes } from '../../domain/roles.js';
import { AGENT_SCOPES, type Scope } from '../../domain/scopes.js';
import { field, fields } from './page.js';

/** The part of the consent and device pages where the user chooses what the agent gets. */

const SCOPE_TEXT: Record<Scope, string> = {
  admin: 'Everything, including API keys, webhooks, billing and account settings',
  'intakes:read': 'Read intakes, their status and results',
  'intakes:write': 'Create, change, send and chase intakes',
  'secrets:read': 'Reveal secret items (credentials) once',
};

/**
 * What the form ticks first: of the scopes asked for, only the everyday agent ones (an agent that asks
 * for everything gets least privilege unless the person ticks more). admin and secrets:read are never
 * ticked for them.
 */
export function defaultScopes(requested: readonly string[]): Scope[] {
  const everyday = AGENT_SCOPES.filter((scope) => requested.includes(scope));
  return everyday.length > 0 ? everyday : [...AGENT_SCOPES];
}

/**
 * The access choices: only the scopes the person's role may give (`grantableScopes`), so a viewer is
 * never offered what their key could not hold anyway.
 */
export function scopeChoices(requested: readonly string[], role: string): Html {
  const offered = grantableScopes(role);
  const checked = defaultScopes(requested).filter((scope) => offered.includes(scope));
  return html`<fieldset>
    <legend>Access</legend>
    ${offered.map(
      (scope) =>
        html`<label
          ><input
            type="checkbox"
            name="scope"
            value="${scope}"
            ${(checked as readonly string[]).includes(scope) ? html`checked` : ''}
          />
          <strong>${scope}</strong>: ${SCOPE_TEXT[scope]}</label
        >`,
    )}
  </fieldset>`;
}

/** Test data is ticked first: live data (real clients, real emails) is a choice the person makes. */
export function modeChoices(): Html {
  return html`<fieldset>
    <legend>Data</legend>
    <label
      ><input type="radio" name="mode" value="test" checked /> Test: the separate test world (emails go to the
      test inbox)</label
    >
    <label><input type="radio" name="mode" value="live" /> Live: real clients</label>
  </fieldset>`;
}

/**
 * The scopes and world a user ticked, or a message saying what is missing or beyond their role (a
 * form posted by hand with more than the page offered).
 */
export function chosenGrant(body: unknown, role: string): { scopes: Scope[]; livemode: boolean } | string {
  const scopes = parseScopes(fields(body, 'scope').join(' '));
  if (!scopes || scopes.length === 0) return 'Choose at least one kind of access.';
  const offered = grantableScopes(role);
  const beyond = scopes.filter((scope) => !offered.includes(scope));
  if (beyond.length > 0) return `Your role (${role}) cannot give ${beyond.join(', ')}.`;
  const mode = field(body, 'mode');
  if (mode !== 'live' && mode !== 'test') return 'Choose live or test data.';
  return { scopes, livemode: mode === 'live' };
}
