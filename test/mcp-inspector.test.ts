import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portabilityProblems } from '../src/modules/mcp/mcp.portable.js';
import { TOOLS } from '../src/modules/mcp/mcp.tools.js';
import { childEnv } from './helpers/env.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { intakeCommand } from './helpers/processes.js';

/*
 * The official MCP Inspector, in its CLI mode, against both transports: an independent client that
 * lists the tools (checking every schema as it reads them) and calls one. Offline (loopback only) and
 * bounded: each run is killed after INSPECTOR_TIMEOUT_MS. The transports are what is checked here, so
 * SQLite alone serves (test/mcp.test.ts runs the same tools on both databases).
 */

const require = createRequire(import.meta.url);
const inspectorCli = require.resolve('@modelcontextprotocol/inspector/cli/build/cli.js');
const INSPECTOR_TIMEOUT_MS = 60_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function inspector(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [inspectorCli, '--cli', ...args],
      {
        env: { ...childEnv(env), LOG_LEVEL: 'silent', NO_COLOR: '1' },
        timeout: INSPECTOR_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function json<T>(run: Run): T {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as T;
}

interface ListedTools {
  tools: {
    name: string;
    annotations?: Record<string, unknown>;
    inputSchema: unknown;
    outputSchema?: unknown;
  }[];
}

/** The portability problems of every schema the Inspector read (mcp.portable.ts): none expected. */
function problemsOf(listed: ListedTools): string[] {
  return listed.tools.flatMap((tool) =>
    [tool.inputSchema, ...(tool.outputSchema ? [tool.outputSchema] : [])].flatMap((schema) =>
      portabilityProblems(schema).map((problem) => `${tool.name} ${problem}`),
    ),
  );
}
interface CallResult {
  isError?: boolean;
  structuredContent?: { total: number; intakes: unknown[] };
  content: { type: string; text: string }[];
}

describe('the official MCP Inspector CLI', () => {
  let server: TestServer;
  let testKey: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    testKey = (await server.createAccount({ plan: 'agency' })).test_key;
  });
  afterAll(async () => server.stop());

  it('lists the tools and calls one over Streamable HTTP', async () => {
    const target = [
      `${server.url}/mcp`,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${testKey}`,
    ];
    const listed = json<ListedTools>(await inspector([...target, '--method', 'tools/list']));
    expect(listed.tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
    expect(problemsOf(listed)).toEqual([]);
    expect(listed.tools.find((t) => t.name === 'get_intake_results')?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
    });

    const called = json<CallResult>(
      await inspector([
        ...target,
        '--method',
        'tools/call',
        '--tool-name',
        'list_intakes',
        '--tool-arg',
        'limit=5',
      ]),
    );
    expect(called.isError ?? false).toBe(false);
    expect(called.structuredContent).toMatchObject({ total: 0, intakes: [] });
  }, 150_000);

  it('lists the tools and calls one over stdio (`intake mcp`)', async () => {
    const target = [process.execPath, ...intakeCommand('mcp')];
    const env = { INTAKE_API_KEY: testKey, BASE_URL: server.url };
    const listed = json<ListedTools>(await inspector([...target, '--method', 'tools/list'], env));
    expect(listed.tools.map((t) => t.name)).toEqual([...TOOLS.map((t) => t.name), 'login', 'logout']);
    expect(problemsOf(listed)).toEqual([]);

    const called = json<CallResult>(
      await inspector(
        [...target, '--method', 'tools/call', '--tool-name', 'list_intakes', '--tool-arg', 'limit=5'],
        env,
      ),
    );
    expect(called.isError ?? false).toBe(false);
    expect(called.structuredContent?.intakes).toEqual([]);
  }, 150_000);
});
