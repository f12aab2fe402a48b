import { register } from 'node:module';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { onExit } from './lib/exit-hooks.js';

/**
 * OpenTelemetry tracing, on when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans of HTTP requests (node:http
 * and Fastify's routes and hooks), outgoing requests (undici: webhooks, SMS, Stripe), PostgreSQL
 * queries and jobs (src/jobs/worker.ts), exported over OTLP/HTTP to the endpoint (the standard
 * OTEL_* variables apply: OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_SCHEDULE_DELAY…).
 *
 * Must start before the modules it instruments are imported: src/main.ts imports it first and the
 * rest of the service after. The service is ES modules, so module loading is hooked through Node's
 * module.register (import-in-the-middle), as OpenTelemetry documents for ESM; only the modules the
 * instrumentations ask for are wrapped (the message channel tells the hook which).
 */
export async function startTracing(): Promise<NodeSDK> {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ?? 'intake',
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes are noise in a trace store.
        ignoreIncomingRequestHook: (request) => request.url === '/healthz' || request.url === '/readyz',
      }),
      new FastifyOtelInstrumentation({ registerOnInitialization: true }),
      new UndiciInstrumentation(),
      new PgInstrumentation(),
    ],
  });
  sdk.start();
  await waitForAllMessagesAcknowledged();
  // Spans still in the batch are sent before the process exits.
  onExit(() => sdk.shutdown());
  return sdk;
}
