/** Read and written by other modules through this module's surface (the rows are this module's). */
export { auditPage, distinctAuditActions, insertAuditEntry, type AuditFilters } from './audit.repository.js';
