/** Read and written by other modules through this module's surface (the rows are this module's). */
export { insertAuditEntry } from './audit.repository.js';
