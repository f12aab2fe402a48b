import net from 'node:net';

/**
 * A TCP proxy on loopback in front of a real dependency (PostgreSQL, SMTP, S3), so a test can make
 * the dependency "go away" (every open connection cut, the port closed so new ones are refused, as
 * with a stopped server) and "come back" on the same port, without touching the dependency itself
 * or mocking anything.
 */
export interface FaultProxy {
  port: number;
  /** Cuts every open connection and refuses new ones until restore(). */
  cut(): void;
  restore(): Promise<void>;
  /** How many connections were cut or refused while down. */
  readonly faults: number;
  close(): Promise<void>;
}

export async function startFaultProxy(targetHost: string, targetPort: number): Promise<FaultProxy> {
  const open = new Set<net.Socket>();
  let down = false;
  let faults = 0;
  const server = net.createServer((incoming) => {
    if (down) {
      faults++;
      incoming.destroy();
      return;
    }
    const outgoing = net.connect({ host: targetHost, port: targetPort });
    open.add(incoming);
    open.add(outgoing);
    const forget = () => {
      open.delete(incoming);
      open.delete(outgoing);
      incoming.destroy();
      outgoing.destroy();
    };
    incoming.on('error', forget);
    outgoing.on('error', forget);
    incoming.on('close', forget);
    outgoing.on('close', forget);
    incoming.pipe(outgoing);
    outgoing.pipe(incoming);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    cut() {
      if (down) return;
      down = true;
      server.close();
      for (const socket of open) {
        faults++;
        socket.destroy();
      }
      open.clear();
    },
    async restore() {
      if (!down) return;
      down = false;
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    get faults() {
      return faults;
    },
    close() {
      for (const socket of open) socket.destroy();
      if (down) return Promise.resolve();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Runs `check` until it stops throwing (its last error is thrown after timeoutMs): for recovery. */
export async function untilPasses(check: () => Promise<void>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
