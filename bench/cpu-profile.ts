import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

/** A CPU profile of this process's main thread being taken: `stop` writes it (Chrome's .cpuprofile). */
export interface CpuProfile {
  stop(): Promise<void>;
}

/** Starts profiling the main thread; `stop` writes the profile to `file`. */
export async function startCpuProfile(file: string): Promise<CpuProfile> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
