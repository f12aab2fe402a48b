import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A package loaded by the first call of the returned function rather than with the module that needs
 * it, for libraries only some processes use (an API process sends no email, an installation on SQLite
 * opens no PostgreSQL connection): a process that never calls it never pays the package's resident
 * memory. `setUp` runs once, right after the load. The type is the caller's (`typeof import`).
 */
export function onFirstUse<T>(specifier: string, setUp?: (loaded: T) => void): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded === undefined) {
      const module = require(specifier) as T;
      setUp?.(module);
      loaded = module;
    }
    return loaded;
  };
}
