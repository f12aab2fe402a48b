#!/usr/bin/env node
/**
 * The production entry (dist/main.js, run by the `intake` bin): tracing first when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set (its instrumentations hook the modules as they load), then the
 * CLI and everything it imports.
 */
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
  const { startTracing } = await import('./tracing.js');
  await startTracing();
}
await import('./cli.js');
