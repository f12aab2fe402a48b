import { z } from 'zod';
import { SCOPES } from '../../domain/scopes.js';

/**
 * RFC 7591 client metadata. Fields beyond these (logo_uri, client_uri, software_id…) are accepted
 * and ignored, as the RFC asks of servers that do not use them.
 */
export const ClientRegistrationBody = z
  .object({
    redirect_uris: z.array(z.string().max(2000)).min(1).max(10),
    client_name: z.string().trim().min(1).max(200).optional(),
    token_endpoint_auth_method: z
      .enum(['none', 'client_secret_post', 'client_secret_basic'])
      .default('client_secret_basic'),
    grant_types: z.array(z.string()).optional(),
    response_types: z.array(z.string()).optional(),
    scope: z.string().optional(),
  })
  .meta({ id: 'OAuthClientRegistration' });

export const ProtectedResourceMetadata = z
  .object({
    resource: z.url(),
    authorization_servers: z.array(z.url()),
    scopes_supported: z.array(z.enum(SCOPES)),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
  })
  .meta({ id: 'OAuthProtectedResourceMetadata', description: 'RFC 9728' });

export const AuthorizationServerMetadata = z
  .object({
    issuer: z.url(),
    authorization_endpoint: z.url(),
    token_endpoint: z.url(),
    registration_endpoint: z.url(),
    revocation_endpoint: z.url(),
    device_authorization_endpoint: z.url(),
    scopes_supported: z.array(z.enum(SCOPES)),
    response_types_supported: z.array(z.string()),
    response_modes_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    authorization_response_iss_parameter_supported: z.boolean(),
  })
  .meta({ id: 'OAuthAuthorizationServerMetadata', description: 'RFC 8414' });

/** OAuth endpoints answer errors as OAuth clients expect (RFC 6749 §5.2), with our message and request id. */
export const OAuthErrorBody = z
  .object({
    error: z.string().meta({ description: 'An OAuth error code, e.g. invalid_redirect_uri, invalid_grant' }),
    error_description: z.string().optional().meta({ description: 'Absent when the body itself was invalid' }),
    message: z.string(),
    request_id: z.string(),
  })
  .meta({ id: 'OAuthError' });

export const RegisteredClient = z
  .object({
    client_id: z.string(),
    client_id_issued_at: z.number().int(),
    client_secret: z
      .string()
      .optional()
      .meta({ description: 'Only for clients that authenticate with a secret; shown once' }),
    client_secret_expires_at: z.number().int().optional(),
    client_name: z.string(),
    redirect_uris: z.array(z.string()),
    token_endpoint_auth_method: z.string(),
    grant_types: z.array(z.string()),
    response_types: z.array(z.string()),
  })
  .meta({ id: 'OAuthRegisteredClient' });
