/**
 * The sessions module's surface for the dashboard: the people of an account and their sessions.
 * Signing in lives in sign-in.service.ts, the request side (cookies, CSRF) in session.ts.
 */
export {
  /** Retention: expired sign-in links and sessions (the sweep_expired_auth job). Returns how many. */
  deleteExpired as purgeExpiredSessions,
  deleteSession,
  deleteSessionsOfUser,
  deleteUser,
  findUserInAccount,
  listUsers,
  type UserRow,
} from './sessions.repository.js';
